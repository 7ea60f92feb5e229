// The run page: one page of the outcome table at a time, filtered, sorted and counted on the
// server (/run/N/api/rows), so a 14,000-episode run opens at once.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const COLUMNS = [
    ["model", "model"], ["protocol", "protocol"], ["summary_source", "summary"], ["task", "task"],
    ["seed", "seed"], ["run_index", "run"], ["status", "status"], ["success", "success"],
    ["end_reason", "end reason"], ["steps", "steps"], ["camera_chain_over", "cams > 5"],
    ["checkpoints_done", "checkpoints"],
    ["objects_placed", "placed"], ["cost_usd", "cost $"], ["labels", "labels"],
  ];
  const TITLES = { camera_chain_over: "camera actions beyond five in a row (paper C.6)", run_index: "run index" };
  const FILTERS = ["model", "protocol", "summary_source", "task", "status", "success", "end_reason", "labels"];
  const state = { filters: {}, sort: ["task", 1], offset: 0, limit: data.first.limit };
  let asked = 0;  // answers to older requests are dropped

  const shown = (v) => v === null || v === undefined ? "" : String(v);
  // identifiers may wrap after _ / : (a model's provider path, a task's words), so the table fits
  const BREAKABLE = new Set(["model", "task", "end_reason", "summary_source"]);
  function breakable(node) {
    for (const text of [...node.childNodes]) {
      if (text.nodeType === Node.ELEMENT_NODE) { breakable(text); continue; }
      const parts = text.textContent.split(/(?<=[_/:])/);
      if (parts.length < 2) continue;
      text.replaceWith(...parts.flatMap((part, i) => i ? [document.createElement("wbr"), part] : [part]));
    }
  }

  function params(withPage) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(state.filters)) if (v) p.set(k, v);
    p.set("sort", state.sort[0]);
    p.set("dir", String(state.sort[1]));
    if (withPage) { p.set("offset", String(state.offset)); p.set("limit", String(state.limit)); }
    return p;
  }

  function buildFilters(choices) {
    const box = document.getElementById("filters");
    for (const key of FILTERS) {
      const label = document.createElement("label");
      label.textContent = (COLUMNS.find(c => c[0] === key) || [key, key])[1] + " ";
      const select = document.createElement("select");
      select.id = "filter-" + key;
      select.append(new Option("all", ""));
      for (const v of key === "labels" ? ["labelled", "unlabelled"] : choices[key]) select.append(new Option(v, v));
      select.addEventListener("change", () => { state.filters[key] = select.value; state.offset = 0; ask(); });
      label.append(select);
      box.append(label);
    }
    const seed = document.createElement("label");
    seed.textContent = "seed ";
    const input = document.createElement("input");
    input.id = "filter-seed"; input.size = 5; input.placeholder = "any";
    input.addEventListener("input", () => { state.filters.seed = input.value.trim(); state.offset = 0; ask(); });
    seed.append(input);
    box.append(seed);
  }

  function buildHead() {
    const head = document.getElementById("head");
    for (const [key, title] of COLUMNS) {
      const th = document.createElement("th");
      th.textContent = title;
      th.dataset.key = key;
      if (TITLES[key]) th.title = TITLES[key];
      th.addEventListener("click", () => {
        state.sort = [key, state.sort[0] === key ? -state.sort[1] : 1];
        state.offset = 0;
        ask();
      });
      head.append(th);
    }
  }

  function cell(row, key, href) {
    const td = document.createElement("td");
    td.dataset.key = key;
    if (key === "task") {
      const a = document.createElement("a");
      a.href = href; a.textContent = row.task; a.className = "episode-link";
      td.append(a);
    } else if (key === "model") {
      td.textContent = row.model + (row.privileged ? " (privileged)" : "");
      if (row.privileged) td.title = "reads simulator state: a reference, never a model score";
    } else if (key === "checkpoints_done") {
      td.textContent = `${shown(row.checkpoints_done)}/${shown(row.checkpoints_total)}`;
    } else if (key === "cost_usd") {
      td.textContent = row.cost_usd === null ? "" : Number(row.cost_usd).toFixed(4);
    } else if (key === "labels") {
      td.textContent = row.labels.join(" ");
    } else {
      td.textContent = shown(row[key]);
    }
    if (BREAKABLE.has(key)) breakable(td);
    return td;
  }

  function render(answer) {
    const body = document.getElementById("rows");
    body.replaceChildren();
    for (const row of answer.rows) {
      const tr = document.createElement("tr");
      tr.className = row.status !== "ok" ? "infra" : row.success ? "ok" : "fail";
      tr.tabIndex = 0;
      const href = `/run/${data.run}/episode?record=${encodeURIComponent(row.record)}`;
      for (const [key] of COLUMNS) tr.append(cell(row, key, href));
      tr.addEventListener("click", (e) => { if (e.target.tagName !== "A") location.href = href; });
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") location.href = href; });
      body.append(tr);
    }
    for (const th of document.querySelectorAll("#head th")) {
      th.classList.toggle("sorted", th.dataset.key === state.sort[0]);
      th.dataset.dir = th.dataset.key === state.sort[0] ? (state.sort[1] > 0 ? "▲" : "▼") : "";
    }
    const rate = answer.judged ? (100 * answer.wins / answer.judged).toFixed(1) : "–";
    document.getElementById("summary").textContent =
      `${answer.shown} of ${answer.total} episodes · success ${answer.wins}/${answer.judged} (${rate}%)` +
      ` · ${answer.shown - answer.judged} infra errors · ${answer.labelled} labelled`;
    const last = Math.min(answer.offset + answer.limit, answer.shown);
    document.getElementById("page-info").textContent =
      answer.shown ? `rows ${answer.offset + 1}–${last} of ${answer.shown}` : "no rows";
    document.getElementById("page-prev").disabled = answer.offset === 0;
    document.getElementById("page-next").disabled = last >= answer.shown;
    // the episode pages step through the episodes in this filter and order (n / p)
    sessionStorage.setItem(`vabench.query.${data.run}`, params(false).toString());
  }

  async function ask() {
    const mine = ++asked;
    const r = await fetch(`/run/${data.run}/api/rows?${params(true)}`);
    const answer = await r.json();
    if (mine !== asked) return;
    if (!r.ok) { document.getElementById("summary").textContent = answer.error || `the server answered ${r.status}`; return; }
    render(answer);
  }

  document.getElementById("page-prev").addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - state.limit); ask();
  });
  document.getElementById("page-next").addEventListener("click", () => { state.offset += state.limit; ask(); });
  buildFilters(data.first.choices);
  buildHead();
  render(data.first);
})();
