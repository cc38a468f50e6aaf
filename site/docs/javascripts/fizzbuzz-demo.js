// Chapter 15's live demo: the FizzBuzz network trained while the site was built, exported to
// ONNX, run here by onnxruntime-web in WebAssembly. No Python, no eagerflow, no server work.
// The page's <div class="fizzbuzz-demo"> names the model and the local onnxruntime-web folder.
(() => {
  const demo = document.querySelector(".fizzbuzz-demo");
  if (!demo || typeof ort === "undefined") return;
  const WORDS = ["the number", "Fizz", "Buzz", "FizzBuzz"];
  const BITS = Number(demo.dataset.bits);
  const input = demo.querySelector("input");
  const answer = demo.querySelector(".fizzbuzz-demo__answer");
  const table = demo.querySelector(".fizzbuzz-demo__probabilities");

  // Absolute URLs: ORT imports its .mjs relative to its own script, not to this page.
  ort.env.wasm.wasmPaths = new URL(demo.dataset.ort, document.baseURI).href;
  ort.env.wasm.numThreads = 1; // no SharedArrayBuffer, so no cross-origin isolation needed
  const loading = ort.InferenceSession.create(new URL(demo.dataset.model, document.baseURI).href);

  async function answerFor(n) {
    // The network's input: n's binary digits, least significant first, as on the page.
    const digits = Float32Array.from({ length: BITS }, (_, i) => (n >> i) & 1);
    const feeds = { digits: new ort.Tensor("float32", digits, [1, BITS]) };
    const session = await loading; // the model is fetched and loaded once
    const results = await session.run(feeds);
    return Array.from(results.output_0.data); // four probabilities
  }

  async function update() {
    const n = Number(input.value);
    if (!Number.isInteger(n) || n < 1 || n >= 2 ** BITS) {
      answer.textContent = `Type a whole number from 1 to ${2 ** BITS - 1}.`;
      table.replaceChildren();
      return;
    }
    const probabilities = await answerFor(n);
    const best = probabilities.indexOf(Math.max(...probabilities));
    answer.textContent = best === 0 ? String(n) : WORDS[best];
    table.replaceChildren(...probabilities.map((p, i) => {
      const row = document.createElement("tr");
      row.innerHTML = `<td>${WORDS[i]}</td><td>${p.toFixed(4)}</td>`;
      return row;
    }));
    demo.dataset.answered = String(n); // for the browser test: this number's answer is shown
  }

  function fail(error) {
    answer.textContent = `The model could not run here: ${error}`;
    console.error(error);
  }

  // One run at a time, in the order the reader typed: a session runs one call at once.
  let pending = Promise.resolve();
  const schedule = () => { pending = pending.then(update).catch(fail); };
  input.addEventListener("input", schedule);
  schedule();
})();
