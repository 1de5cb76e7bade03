// The jobs page's script: live cells (status, duration, primary metric, attempts, note), the columns the reader
// hides (kept in this browser's localStorage) and the "Compare selected" button. It reads `poll`, `getJSON`,
// `setStatus` and `TERMINAL` from app.js (loaded first); every request goes back to this console. Without it the
// page still works: every column shows and the comparison form submits as it is.
"use strict";

const HIDDEN_COLUMNS = "starforge.jobs.hidden-columns";
const LIVE_CELLS = {duration: "[data-duration]", metric: "[data-metric]", attempts: "[data-attempts]",
                    message: "[data-message]"};

function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;  // text, never HTML
}

function liveJobs(table) {
  poll(async () => {
    const body = await getJSON(table.dataset.live);
    let waiting = false;
    for (const job of body.jobs) {
      const row = table.querySelector('tr[data-job="' + CSS.escape(job.job_ref) + '"]');
      if (!row) continue;
      setStatus(row.querySelector("[data-status]"), job.status);
      for (const [field, selector] of Object.entries(LIVE_CELLS)) setText(row.querySelector(selector), job[field] || "");
      if (!TERMINAL.has(job.status)) waiting = true;
    }
    return waiting ? 2000 : 10000;
  }, 2000);
}

function hiddenColumns() {
  try {
    const stored = JSON.parse(localStorage.getItem(HIDDEN_COLUMNS) || "[]");
    return new Set(Array.isArray(stored) ? stored.filter((c) => typeof c === "string") : []);
  } catch (err) {
    return new Set();  // unreadable or blocked storage: every column shows
  }
}

function showColumns(table, hidden) {
  for (const cell of table.querySelectorAll("[data-col]")) cell.hidden = hidden.has(cell.dataset.col);
}

function columnsMenu(menu, table) {
  const hidden = hiddenColumns();
  for (const box of menu.querySelectorAll("input[data-column]")) {
    box.checked = !hidden.has(box.dataset.column);
    box.addEventListener("change", () => {
      if (box.checked) hidden.delete(box.dataset.column); else hidden.add(box.dataset.column);
      try { localStorage.setItem(HIDDEN_COLUMNS, JSON.stringify([...hidden])); } catch (err) { /* kept for this view */ }
      showColumns(table, hidden);
    });
  }
  showColumns(table, hidden);
  menu.hidden = false;
}

function compareForm(form) {
  const button = document.getElementById("compare-selected");
  const update = () => {
    const picked = form.querySelectorAll('input[name="runs"]:checked').length;
    button.disabled = picked < 2;
    button.textContent = picked >= 2 ? "Compare " + picked + " selected" : button.dataset.label;
  };
  form.addEventListener("change", update);
  update();
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.querySelector("table#jobs[data-live]");
  if (!table) return;
  liveJobs(table);
  const menu = document.getElementById("columns-menu");
  if (menu) columnsMenu(menu, table);
  const form = document.getElementById("compare-form");
  if (form) compareForm(form);
});
