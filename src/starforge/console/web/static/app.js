// The StarForge web console's only script: live job statuses, the live log (SSE) and refreshed metric charts.
// Every request goes back to this console (same origin, the session cookie); the pages work without it.
"use strict";

const TERMINAL = new Set(["succeeded", "failed", "stopped"]);

function setStatus(el, status) {
  if (!el || el.textContent === status) return;
  el.textContent = status;
  el.className = "status status-" + status;
}

async function getJSON(url) {
  const response = await fetch(url, {credentials: "same-origin", headers: {Accept: "application/json"}});
  if (!response.ok) throw new Error(url + ": " + response.status);
  return response.json();
}

function poll(task, every) {
  let timer = null;
  const run = async () => {
    let again = every;
    try {
      again = await task();
    } catch (err) {
      again = every * 3;
    }
    if (again) timer = setTimeout(run, document.hidden ? again * 4 : again);
  };
  timer = setTimeout(run, every);
  return () => clearTimeout(timer);
}

function liveJobs(table) {
  poll(async () => {
    const body = await getJSON(table.dataset.live);
    let waiting = false;
    for (const job of body.jobs) {
      const row = table.querySelector('tr[data-job="' + CSS.escape(job.job_ref) + '"]');
      if (!row) continue;
      setStatus(row.querySelector("[data-status]"), job.status);
      const message = row.querySelector("[data-message]");
      if (message && message.textContent !== job.message) message.textContent = job.message;
      if (!TERMINAL.has(job.status)) waiting = true;
    }
    return waiting ? 2000 : 10000;
  }, 2000);
}

function liveJob(head) {
  if (head.dataset.final === "true") return;
  poll(async () => {
    const body = await getJSON(head.dataset.live);
    setStatus(head.querySelector("[data-status]"), body.status);
    const message = document.querySelector("p[data-message]");
    if (message) message.textContent = body.message;
    for (const part of ["facts", "charts", "benchmarks", "attempts", "history", "artifacts"]) {
      const section = document.getElementById(part);
      if (section && section.innerHTML !== body[part]) section.innerHTML = body[part];  // rendered and escaped by the console
    }
    if (body.final) {
      head.dataset.final = "true";
      for (const control of head.querySelectorAll("[data-stop]")) control.remove();  // pause, resume, stop
      return 0;
    }
    return 1000;
  }, 1000);
}

function liveLog(pre) {
  const follow = document.getElementById("log-follow");
  const end = document.getElementById("log-end");
  const state = document.getElementById("log-state");
  const toEnd = () => { pre.scrollTop = pre.scrollHeight; };
  end.addEventListener("click", () => { toEnd(); follow.checked = true; pre.focus(); });
  pre.addEventListener("scroll", () => {
    const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
    if (!atEnd && follow.checked) follow.checked = false;
  });
  const source = new EventSource(pre.dataset.stream);
  state.textContent = "connecting…";
  source.addEventListener("open", () => { state.textContent = "live"; });
  source.addEventListener("log", (event) => {
    pre.append(document.createTextNode(event.data));
    if (follow.checked) toEnd();
  });
  source.addEventListener("end", (event) => {
    source.close();
    state.textContent = "ended: " + event.data;
    pre.dataset.ended = event.data;
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) state.textContent = "disconnected; reload to retry";
  });
}

function copyButton(button) {
  const field = document.getElementById(button.dataset.copy);
  button.addEventListener("click", async () => {
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = "Copied";
    } catch (err) {
      button.textContent = "Selected: press Ctrl+C";  // no clipboard access (plain http): the text is selected
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) copyButton(button);
  const table = document.querySelector("table[data-live]");
  if (table) liveJobs(table);
  const head = document.getElementById("job");
  if (head) liveJob(head);
  const log = document.getElementById("log");
  if (log) liveLog(log);
});
