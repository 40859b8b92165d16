"use strict";
// Every value from the pairs file reaches the page through textContent, never as markup.
(() => {
  const WORDS = ["not relevant", "relevant", "highly relevant", "perfectly relevant"];
  const $ = (id) => document.getElementById(id);
  let pairs = [];
  let at = 0;
  let saving = false;
  let stopped = false;

  const judged = () => pairs.filter((p) => p.grade !== null).length;
  const rank = (r) => (r === null ? "not in its results" : "ranked #" + r);

  function nextUnjudged(from) {
    for (let step = 1; step <= pairs.length; step += 1) {
      const i = (from + step) % pairs.length;
      if (pairs[i].grade === null) return i;
    }
    return from;
  }

  function render() {
    const total = pairs.length;
    const done = judged();
    $("progress").textContent = `${done} of ${total} judged`;
    $("bar").max = Math.max(total, 1);
    $("bar").value = done;
    $("finished").hidden = total === 0 || done < total;
    if (total === 0) return;
    const p = pairs[at];
    $("pair").hidden = false;
    $("position").textContent = `pair ${at + 1} of ${total}`;
    $("query-id").textContent = p.query_id;
    $("query").textContent = p.query;
    $("doc-id").textContent = p.doc_id;
    $("title").textContent = p.title || "(no title)";
    $("text").textContent = p.text;
    $("baseline").textContent = rank(p.baseline_rank);
    $("candidate").textContent = rank(p.candidate_rank);
    $("why").textContent = p.why;
    $("comparison").textContent = p.comparison;
    $("grade").textContent =
      p.grade === null ? "not judged yet" : `${p.grade}, ${WORDS[p.grade]} (saved)`;
    for (const button of document.querySelectorAll(".legend button")) {
      button.setAttribute("aria-pressed", String(Number(button.dataset.grade) === p.grade));
    }
  }

  function fail(message) {
    $("status").textContent = "";
    $("error").textContent = message;
    $("error").hidden = false;
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      cache: "no-store",
    });
    if (!response.ok) {
      let reason = response.statusText;
      try {
        reason = (await response.json()).error || reason;
      } catch (_) {
        // not JSON: keep the status text
      }
      throw new Error(`the server answered ${response.status}: ${reason}`);
    }
    return response.json();
  }

  async function grade(value) {
    if (saving || stopped || pairs.length === 0) return;
    const index = at;
    const p = pairs[index];
    saving = true;
    $("error").hidden = true;
    $("status").textContent = `saving ${value} for ${p.query_id} / ${p.doc_id}\u2026`;
    try {
      await post("/label", { query_id: p.query_id, doc_id: p.doc_id, grade: value });
    } catch (error) {
      fail(`Not saved: ${error.message}. The pair keeps its previous grade; press ${value} to try again.`);
      return;
    } finally {
      saving = false;
    }
    p.grade = value; // only now: the server wrote it to disk before answering 200
    $("status").textContent = `saved ${value} (${WORDS[value]}) for ${p.query_id} / ${p.doc_id}`;
    if (at === index) at = nextUnjudged(index);
    render();
  }

  function move(step) {
    if (pairs.length === 0) return;
    at = (at + step + pairs.length) % pairs.length;
    render();
  }

  async function stop() {
    try {
      await post("/done", {});
    } catch (error) {
      fail(`Could not stop the server: ${error.message}`);
      return;
    }
    stopped = true;
    $("status").textContent = "The judging server has stopped; every saved grade is on disk. You may close this tab.";
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const key = event.key;
    if (key >= "0" && key <= "3" && key.length === 1) grade(Number(key));
    else if (key === "j" || key === "ArrowRight") move(1);
    else if (key === "k" || key === "ArrowLeft") move(-1);
    else return;
    event.preventDefault();
  });
  for (const button of document.querySelectorAll(".legend button")) {
    button.addEventListener("click", () => grade(Number(button.dataset.grade)));
  }
  $("stop").addEventListener("click", stop);

  fetch("/pairs", { cache: "no-store" })
    .then((response) => {
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      return response.json();
    })
    .then((loaded) => {
      pairs = loaded;
      const first = pairs.findIndex((p) => p.grade === null);
      at = first < 0 ? 0 : first; // resume at the first pair not yet judged
      render();
    })
    .catch((error) => fail(`Could not load the pairs: ${error.message}`));
})();
