// The episode page: keyboard navigation (steps and episodes) and the C.9 annotation panel,
// saved on every change to the run's _annotations/<annotator>.jsonl.
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const api = `/run/${data.run}/api/labels`;
  const steps = [...document.querySelectorAll(".step")];
  let current = -1;

  // -- episodes: neighbours in the run page's current filter and sort order (asked of the server)
  const query = sessionStorage.getItem(`vabench.query.${data.run}`) || "";
  const near = { "-1": null, "1": null };
  const episodeHref = (rec) => `/run/${data.run}/episode?record=${encodeURIComponent(rec)}`;
  for (const [id, step] of [["prev-episode", -1], ["next-episode", 1]]) {
    const a = document.getElementById(id);
    a.classList.add("disabled");
    fetch(`/run/${data.run}/api/neighbour?${query}&record=${encodeURIComponent(data.record)}&step=${step}`)
      .then(r => r.ok ? r.json() : { record: null })
      .then(answer => {
        near[step] = answer.record ? episodeHref(answer.record) : null;
        if (near[step]) { a.href = near[step]; a.classList.remove("disabled"); }
        a.dataset.ready = "1";
      });
  }
  const link = (step) => near[String(step)];

  function select(i) {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach((s, k) => s.classList.toggle("current", k === current));
    steps[current].scrollIntoView({ block: "start" });
    steps[current].focus({ preventScroll: true });
  }

  // -- images at full size: every model-facing view (named) and recording view, ← / → between them
  const zoomables = [...document.querySelectorAll("img.zoomable")];
  const viewer = document.getElementById("viewer");
  const big = document.getElementById("viewer-image");
  let viewing = -1;
  function view(i) {
    viewing = (i + zoomables.length) % zoomables.length;
    const img = zoomables[viewing], step = img.closest(".step");
    big.src = img.src;
    big.alt = img.alt;
    document.getElementById("viewer-name").textContent = img.dataset.name;
    document.getElementById("viewer-where").textContent =
      (step ? `step ${step.dataset.step} · ` : "") + `image ${viewing + 1} of ${zoomables.length}`;
    viewer.hidden = false;
    document.getElementById("viewer-close").focus({ preventScroll: true });
  }
  function unview() {
    viewer.hidden = true;
    if (viewing >= 0) zoomables[viewing].focus({ preventScroll: true });
  }
  zoomables.forEach((img, i) => {
    img.addEventListener("click", () => view(i));
    img.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); view(i); } });
  });
  document.getElementById("viewer-close").addEventListener("click", unview);
  viewer.addEventListener("click", (e) => { if (e.target === viewer || e.target.classList.contains("viewer-body")) unview(); });

  document.addEventListener("keydown", (e) => {
    if (!viewer.hidden) {
      const go = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
      if (go) { e.preventDefault(); view(viewing + go); } else if (e.key === "Escape") { e.preventDefault(); unview(); }
      return;
    }
    if (e.target.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey) return;
    const go = { j: 1, ArrowDown: 1, k: -1, ArrowUp: -1 }[e.key];
    if (go) { e.preventDefault(); select(current + go); return; }
    if (e.key === "n" || e.key === "p") {
      const href = link(e.key === "n" ? 1 : -1);
      if (href) location.href = href;
    } else if (e.key === "u") {
      location.href = `/run/${data.run}`;
    }
  });

  // -- annotation
  const who = document.getElementById("annotator");
  const status = document.getElementById("save-status");
  const notes = document.getElementById("notes");
  const radios = (name) => [...document.querySelectorAll(`input[name="${name}"]`)];
  const read = (name) => { const r = radios(name).find(x => x.checked); return r ? r.value : ""; };
  const put = (name, v) => { for (const r of radios(name)) r.checked = r.value === (v === null || v === undefined ? "" : String(v)); };

  function gateRules() {
    for (const row of document.querySelectorAll(".criterion")) {
      const gate = row.dataset.gate;
      const off = gate && read(`gate-${gate}`) === "false";
      row.classList.toggle("na", !!off);
      for (const r of row.querySelectorAll("input")) r.disabled = !!off;
      if (off) put(`label-${row.dataset.criterion}`, null);
    }
  }

  function payload() {
    const gates = {}, labels = {};
    for (const g of ["error", "ambiguity"]) { const v = read(`gate-${g}`); gates[g] = v === "" ? null : v === "true"; }
    for (const row of document.querySelectorAll(".criterion")) {
      const c = row.dataset.criterion, v = read(`label-${c}`);
      labels[c] = v === "" ? null : Number(v);
    }
    return { record: data.record, annotator: who.value.trim(), gates, labels, notes: notes.value };
  }

  // loads and saves go out one at a time, each save with the form as it is then: the last save is
  // the latest line, and a save never overtakes the load of the annotator it belongs to
  let queue = Promise.resolve();
  const enqueue = (job) => { queue = queue.then(job, job); return queue; };
  const save = () => enqueue(send);
  const fields = () => document.querySelectorAll("#annotation input[type=radio], #notes");
  const lock = (on) => { for (const f of fields()) f.disabled = on; if (!on) gateRules(); };
  // the labels are inert (no click lands, nothing is shown as chosen) until the id is valid; the
  // judges' verdicts beside them are not (their cited steps are links)
  const box = document.getElementById("label-fields");
  const valid = () => who.checkValidity() && who.value.trim() !== "";
  function arm() {
    const ok = valid();
    for (const field of box.querySelectorAll("label")) field.inert = !ok;
    box.classList.toggle("inert", !ok);
    if (!ok) {
      status.textContent = who.value.trim()
        ? "Not a valid annotator id (letters, digits, _ . -, up to 64): labelling is off until it is."
        : "Enter your annotator id to label.";
      status.classList.toggle("failed", !!who.value.trim());
    } else status.classList.remove("failed");
    return ok;
  }

  async function send() {
    if (!arm()) return;
    gateRules();
    try {
      const r = await fetch(api, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload()) });
      const body = await r.json().catch(() => ({ error: `the server answered ${r.status}` }));
      if (!r.ok) throw new Error(body.error);
      status.textContent = `saved ${new Date(body.time).toLocaleTimeString()} as ${body.annotator}`;
      status.dataset.saved = body.time;
      status.classList.remove("failed");
    } catch (e) {
      status.textContent = `NOT saved: ${e.message}`;
      status.dataset.saved = "";
      status.classList.add("failed");
    }
    others();
  }

  async function fetchLoad() {
    const id = who.value.trim();
    localStorage.setItem("vabench.annotator", id);
    for (const g of ["error", "ambiguity"]) put(`gate-${g}`, null);
    for (const row of document.querySelectorAll(".criterion")) put(`label-${row.dataset.criterion}`, null);
    notes.value = "";
    if (!arm()) { gateRules(); return; }
    lock(true);
    try {
      const r = await fetch(`${api}?record=${encodeURIComponent(data.record)}&annotator=${encodeURIComponent(id)}`);
      if (!r.ok) throw new Error(`the server answered ${r.status}`);
      const list = await r.json();
      if (list.length) {
        const l = list[0];
        for (const g of ["error", "ambiguity"]) put(`gate-${g}`, l.gates[g]);
        for (const [c, v] of Object.entries(l.labels)) put(`label-${c}`, v);
        notes.value = l.notes || "";
        status.textContent = `loaded labels of ${id} saved ${new Date(l.time).toLocaleTimeString()}`;
      } else status.textContent = `no labels of ${id} yet for this episode`;
    } catch (e) {
      status.textContent = `could not load the labels of ${id}: ${e.message}`;
    } finally {
      lock(false);
    }
    others();
  }
  const load = () => enqueue(fetchLoad);

  async function others() {
    const r = await fetch(`${api}?record=${encodeURIComponent(data.record)}`);
    const list = r.ok ? await r.json() : [];
    document.getElementById("others").textContent = list.length ? "Labelled by: " + list.map(l => l.annotator).join(", ") : "Not labelled yet.";
    verdicts();
  }

  // -- judges beside people (/run/N/api/judged): each criterion shows every judge's label, the steps
  // its samples cite (links to those cards) and people's labels; a disagreement is marked
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
  async function verdicts() {
    const r = await fetch(`/run/${data.run}/api/judged?record=${encodeURIComponent(data.record)}`);
    const list = r.ok ? await r.json() : [];
    for (const box of document.querySelectorAll(".verdicts")) box.replaceChildren();
    for (const it of list) {
      const box = document.querySelector(`.verdicts[data-for="${it.criterion}"]`);
      const line = el("div", `verdict status-${it.status.replace(" ", "-")}`);
      line.dataset.status = it.status;
      line.append(el("span", "who", it.judge + " "), el("b", "judge-label", String(it.judge_label)), ` (${it.judge_votes})`);
      it.steps.forEach((s, k) => {
        const a = el("a", "step-link", `step ${s.step}`);
        a.href = `#step-${s.card}`;
        line.append(k ? ", " : " at ", a);
      });
      const people = Object.entries(it.people);
      line.append(" · people ");
      if (it.people_label !== null) line.append(el("b", "people-label", String(it.people_label)), ` (${it.people_votes})`);
      line.append(people.length ? ": " + people.map(([who, v]) => `${who} ${v}`).join(", ") : "none yet");
      if (it.status === "disagree") line.append(el("span", "pill fail", "disagree"));
      box.append(line);
    }
    document.getElementById("judged-note").hidden = !list.length;
    if (!shown) { shown = true; arrive(); }  // the verdicts moved the criteria: go to the one asked again
  }
  let shown = false;

  // -- an address naming a card (#step-3, a cited step) or a criterion (#criterion-AE, from the
  // judge page) goes there
  function arrive() {
    const target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    if (!target) return;
    const k = steps.indexOf(target);
    if (k >= 0) { select(k); return; }
    if (target.classList.contains("criterion")) {
      for (const c of document.querySelectorAll(".criterion.asked")) c.classList.remove("asked");
      target.classList.add("asked");
      target.scrollIntoView({ block: "center" });
    }
  }
  window.addEventListener("hashchange", arrive);
  arrive();

  for (const input of document.querySelectorAll("#annotation input[type=radio]")) input.addEventListener("change", save);
  let timer = null;
  notes.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(save, 500); });
  notes.addEventListener("change", () => { clearTimeout(timer); save(); });
  who.addEventListener("change", load);
  who.addEventListener("input", arm);
  who.value = localStorage.getItem("vabench.annotator") || "";
  load();
  verdicts();  // shown before any annotator id is given (each save shows them again)
})();
