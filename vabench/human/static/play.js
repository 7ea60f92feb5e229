// The human player's page: shows the seat's observation (what a model sees) and sends one decision
// per click. Every text from the server is set as text (textContent), never as HTML.
(() => {
  const main = document.getElementById("play");
  const base = main.dataset.base;
  const $ = (id) => document.getElementById(id);
  let busy = false;
  let answered = 0; // responses rendered: a test waits for this count (data-answered) to move
  let controlsFor = null; // the brief the controls were built for
  let studyFor = null; // the episode the summary stage was built for

  function el(tag, attrs = {}, text = null) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== null) e.textContent = text;
    return e;
  }

  function field(f) {
    const label = el("label", {}, f.name.replace(/_mm$|_deg$/, "") + " ");
    let input;
    if (f.choices) {
      input = el("select", { name: f.name });
      for (const c of f.choices) input.append(el("option", { value: c }, c));
    } else {
      input = el("input", { name: f.name, type: "number", min: f.min, max: f.max, step: "any", value: f.min, required: "" });
      label.append(input, document.createTextNode(` ${f.unit} (${f.min}..${f.max})`));
      return label;
    }
    label.append(input);
    return label;
  }

  function payloadOf(form) {
    const out = { action: form.dataset.action };
    for (const input of form.querySelectorAll("select, input")) {
      const value = input.type === "number" ? Number(input.value) : input.value;
      const [head, tail] = input.name.split(".");
      if (tail) (out[head] = out[head] || {})[tail] = value;
      else out[head] = value;
    }
    return out;
  }

  function buildControls(controls) {
    const robot = $("robot");
    robot.replaceChildren();
    for (const c of controls.robot) {
      const form = el("form", { class: c.fields.length ? "command fields" : "command", "data-action": c.action });
      form.append(el("span", { class: "name" }, c.action));
      for (const f of c.fields) form.append(field(f));
      form.append(el("button", { class: "send", type: "submit" }, "Send"));
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (form.reportValidity()) send(payloadOf(form));
      });
      robot.append(form);
    }
    const camera = $("camera");
    camera.replaceChildren();
    for (const name of controls.camera) {
      const b = el("button", { class: "camera-action", type: "button", "data-action": name }, name.replace(/^camera\./, ""));
      b.addEventListener("click", () => send({ action: name }));
      camera.append(b);
    }
    $("camera-head").hidden = camera.hidden = controls.camera.length === 0;
  }

  function showObservation(s) {
    const o = s.obs;
    $("instruction").textContent = o.instruction;
    $("step").textContent = `step ${o.step}`;
    const budget = $("budget");
    budget.hidden = o.budget_left === null;
    budget.textContent = o.budget_left === null ? "" : `${o.budget_left} of ${o.budget} steps left`;
    const images = $("images");
    images.replaceChildren();
    images.classList.toggle("one", o.views.length === 1);
    o.views.forEach((view, i) => {
      const src = `${base}/image/${s.episode}/${o.step}/${i}.jpg`;
      const fig = el("figure");
      fig.append(el("img", { src, alt: o.views[i], class: "observation-image" }), el("figcaption", {}, o.views[i]));
      images.append(fig);
    });
    const fb = $("feedback");
    fb.replaceChildren();
    if (o.feedback) {
      fb.append(document.createTextNode(`Last action: ${o.feedback.action} `));
      fb.append(el("span", { class: o.feedback.valid ? "ok" : "fail" }, o.feedback.valid ? "valid" : "INVALID"));
      fb.append(document.createTextNode("; planner "));
      fb.append(el("span", { class: o.feedback.planner_success ? "ok" : "fail" }, o.feedback.planner_success ? "succeeded" : "FAILED"));
      if (o.feedback.text) fb.append(el("div", {}, `Feedback: ${o.feedback.text}`));
    }
    $("state").textContent = o.state;
    $("executed").textContent = o.executed.length ? o.executed.join(", ") : "none yet";
    $("text").textContent = o.text;
  }

  function showEnd(s) {
    const m = $("message");
    m.hidden = false;
    $("message-title").textContent = s.phase === "done" ? "Every episode of this run is played" : `Episode over: ${s.end.reason}`;
    $("message-text").textContent = s.phase === "done" ? "Thank you. You may close this page." : s.end.text;
    const table = $("row");
    const body = table.querySelector("tbody");
    body.replaceChildren();
    for (const [k, v] of Object.entries((s.end && s.end.row) || {})) {
      const tr = el("tr");
      tr.append(el("td", {}, k), el("td", {}, String(v)));
      body.append(tr);
    }
    table.hidden = !s.end;
    $("next").hidden = s.phase === "done";
  }

  function frame(demo, episode, i) {
    const fig = el("figure");
    const src = `${base}/demo/${episode}/${encodeURIComponent(demo.name)}/${i}`;
    fig.append(el("img", { src, alt: `${demo.name} frame ${i}`, class: "demo-image" }));
    fig.append(el("figcaption", {}, `${demo.name} frame ${i}/${demo.last} (t = ${(i / demo.fps).toFixed(2)} s)`));
    return fig;
  }

  function buildStudy(s) {
    const st = s.study;
    $("study-instruction").textContent = st.instruction;
    $("study-gate").textContent = String(st.gate);
    $("study-model").textContent = st.model;
    const demos = $("demos");
    demos.replaceChildren();
    for (const d of st.demos) {
      const grid = el("div", { class: "demo-frames", "data-demo": d.name });
      for (const i of d.first) grid.append(frame(d, s.episode, i));
      const more = el("div", { class: "more" });
      const input = el("input", { type: "number", min: 0, max: d.last, step: 1, value: 0, "aria-label": "frame" });
      const show = el("button", { type: "button" }, `Show frame (0..${d.last})`);
      show.addEventListener("click", () => {
        const i = Number(input.value);
        if (Number.isInteger(i) && i >= 0 && i <= d.last) grid.append(frame(d, s.episode, i));
      });
      more.append(input, show);
      demos.append(el("h2", {}, `Demonstration ${d.name}`), grid, more);
    }
    const fields = $("summary-fields");
    fields.replaceChildren();
    for (const f of st.fields) {
      const label = el("label", {}, f.name + (f.list ? " (one item per line)" : ""));
      label.append(el("textarea", { name: f.name, "data-list": f.list ? "1" : "", required: "", maxlength: 2000 }));
      fields.append(label);
    }
  }

  $("summary-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const out = {};
    for (const t of $("summary-fields").querySelectorAll("textarea")) {
      out[t.name] = t.dataset.list ? t.value.split("\n").map((x) => x.trim()).filter(Boolean) : t.value;
    }
    call("/api/summary", out);
  });

  function render(s) {
    main.dataset.phase = s.phase;
    $("message").hidden = true;
    $("study-view").hidden = s.phase !== "studying";
    $("episode-view").hidden = s.phase !== "playing";
    $("episode").textContent = s.episode ? `episode ${s.episode}` : "";
    if (s.phase === "studying") {
      $("step").textContent = "summary stage";
      $("budget").hidden = true;
      if (studyFor !== s.episode) {
        buildStudy(s);
        studyFor = s.episode;
      }
      const refused = $("study-refused");
      refused.hidden = !s.refused;
      refused.textContent = s.refused ? `Not accepted: ${s.refused}` : "";
    } else if (s.phase === "playing") {
      if (controlsFor !== s.episode) {
        buildControls(s.brief.controls);
        $("system").textContent = s.brief.system;
        controlsFor = s.episode;
      }
      showObservation(s);
      const refused = $("refused");
      refused.hidden = !s.refused;
      refused.textContent = s.refused ? `Refused, nothing was executed: ${s.refused}` : "";
    } else {
      $("step").textContent = "";
      $("budget").hidden = true;
      showEnd(s);
    }
  }

  async function call(path, body) {
    if (busy) return;
    busy = true;
    document.querySelectorAll("button").forEach((b) => (b.disabled = true));
    try {
      const r = await fetch(base + path, body === undefined ? {} : {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      const s = await r.json();
      if (!r.ok) throw new Error(s.error || r.statusText);
      render(s);
    } catch (e) {
      const refused = main.dataset.phase === "studying" ? $("study-refused") : $("refused");
      refused.hidden = false;
      refused.textContent = `Not sent: ${e.message}`;
    } finally {
      busy = false;
      document.querySelectorAll("button").forEach((b) => (b.disabled = false));
      main.dataset.answered = String(++answered);
    }
  }

  function send(payload) {
    const reason = $("reason").value.trim();
    call("/api/answer", { ...payload, ...(reason ? { reason } : {}) }).then(() => ($("reason").value = ""));
  }

  $("stop").addEventListener("click", () => {
    if (confirm("Stop this episode? It ends as a failure.")) send({ stop: true });
  });
  $("next").addEventListener("click", () => call("/api/next", {}));
  call("/api/state");
})();
