// The run page: the outcome table with filters, sorting, counts and success rates of the filter.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const rows = data.rows;
  const labelled = data.labelled;
  const COLUMNS = [
    ["model", "model"], ["protocol", "protocol"], ["summary_source", "summary"], ["task", "task"],
    ["seed", "seed"], ["run_index", "run"], ["status", "status"], ["success", "success"],
    ["end_reason", "end reason"], ["steps", "steps"], ["camera_chain_over", "cameras > 5 in a row"],
    ["checkpoints_done", "checkpoints"],
    ["objects_placed", "placed"], ["cost_usd", "cost $"], ["labels", "labels"],
  ];
  const FILTERS = ["model", "protocol", "summary_source", "task", "status", "success", "end_reason", "labels"];
  const state = { filters: {}, sort: ["task", 1] };

  const value = (row, key) => key === "labels" ? (labelled[row.record] || []).join(" ") : row[key];
  const shown = (v) => v === null || v === undefined ? "" : String(v);

  function buildFilters() {
    const box = document.getElementById("filters");
    for (const key of FILTERS) {
      const label = document.createElement("label");
      label.textContent = (COLUMNS.find(c => c[0] === key) || [key, key])[1] + " ";
      const select = document.createElement("select");
      select.id = "filter-" + key;
      const values = key === "labels" ? ["labelled", "unlabelled"]
        : [...new Set(rows.map(r => shown(r[key])))].sort();
      select.append(new Option("all", ""));
      for (const v of values) select.append(new Option(v, v));
      select.addEventListener("change", () => { state.filters[key] = select.value; render(); });
      label.append(select);
      box.append(label);
    }
    const seed = document.createElement("label");
    seed.textContent = "seed ";
    const input = document.createElement("input");
    input.id = "filter-seed"; input.size = 5; input.placeholder = "any";
    input.addEventListener("input", () => { state.filters.seed = input.value.trim(); render(); });
    seed.append(input);
    box.append(seed);
  }

  function keep(row) {
    for (const [key, want] of Object.entries(state.filters)) {
      if (!want) continue;
      if (key === "labels") {
        const has = (labelled[row.record] || []).length > 0;
        if ((want === "labelled") !== has) return false;
      } else if (shown(row[key]) !== want) return false;
    }
    return true;
  }

  function compare(a, b) {
    const [key, dir] = state.sort;
    const x = value(a, key), y = value(b, key);
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
  }

  function buildHead() {
    const head = document.getElementById("head");
    for (const [key, title] of COLUMNS) {
      const th = document.createElement("th");
      th.textContent = title;
      th.dataset.key = key;
      th.addEventListener("click", () => {
        state.sort = [key, state.sort[0] === key ? -state.sort[1] : 1];
        render();
      });
      head.append(th);
    }
  }

  function render() {
    const list = rows.filter(keep).sort(compare);
    const body = document.getElementById("rows");
    body.replaceChildren();
    for (const row of list) {
      const tr = document.createElement("tr");
      tr.className = row.status !== "ok" ? "infra" : row.success ? "ok" : "fail";
      tr.tabIndex = 0;
      const href = `/run/${data.run}/episode?record=${encodeURIComponent(row.record)}`;
      for (const [key] of COLUMNS) {
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
        } else {
          td.textContent = shown(value(row, key));
        }
        tr.append(td);
      }
      tr.addEventListener("click", (e) => { if (e.target.tagName !== "A") location.href = href; });
      tr.addEventListener("keydown", (e) => { if (e.key === "Enter") location.href = href; });
      body.append(tr);
    }
    for (const th of document.querySelectorAll("#head th")) {
      th.classList.toggle("sorted", th.dataset.key === state.sort[0]);
      th.dataset.dir = th.dataset.key === state.sort[0] ? (state.sort[1] > 0 ? "▲" : "▼") : "";
    }
    const judged = list.filter(r => r.status === "ok");
    const wins = judged.filter(r => r.success).length;
    const rate = judged.length ? (100 * wins / judged.length).toFixed(1) : "–";
    const nLabelled = list.filter(r => (labelled[r.record] || []).length).length;
    document.getElementById("summary").textContent =
      `${list.length} of ${rows.length} episodes · success ${wins}/${judged.length} (${rate}%)` +
      ` · ${list.length - judged.length} infra errors · ${nLabelled} labelled`;
    // the episode pages step through the episodes in this order (n / p)
    sessionStorage.setItem(`vabench.order.${data.run}`, JSON.stringify(list.map(r => r.record)));
  }

  buildFilters();
  buildHead();
  render();
})();
