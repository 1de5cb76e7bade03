// The StarForge web console's main script: the live job page, refreshed metric charts and the playground's streamed
// chat (the jobs page's script is jobs.js, the job's log log.js). Every request goes back to this console (same
// origin, the session cookie; the chat's POST carries the session's CSRF token as a header); the pages work without
// it, except the chat.
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

function liveJob(head) {
  if (head.dataset.final === "true") return;
  poll(async () => {
    const body = await getJSON(head.dataset.live);
    setStatus(head.querySelector("[data-status]"), body.status);
    const message = document.querySelector("p[data-message]");
    if (message) message.textContent = body.message;
    document.dispatchEvent(new CustomEvent("sf:live", {detail: body}));  // charts.js redraws its charts in place
    for (const part of ["facts", "benchmarks", "attempts", "history", "artifacts"]) {
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

// One chat completion streamed through the console's proxy: OpenAI server-sent events, `data: {json}` until `[DONE]`.
async function streamChat(form, body, onText) {
  const response = await fetch(form.dataset.endpoint, {
    method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", Accept: "text/event-stream", "X-CSRF-Token": form.dataset.csrf},
  });
  if (!response.ok) throw await refusal(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {done, value} = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, {stream: true}).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (!data) continue;
      if (data === "[DONE]") return;
      let event;
      try { event = JSON.parse(data); } catch (err) { continue; }
      if (event.error) throw new Error(event.error.message || String(event.error));
      for (const choice of event.choices || []) {
        const text = choice.delta && choice.delta.content;
        if (text) onText(text);
      }
    }
  }
}

async function refusal(response) {
  let detail = "HTTP " + response.status;
  try { detail = (await response.json()).detail || detail; } catch (err) { /* not JSON: keep the status */ }
  return new Error(detail);
}

async function servedModel(form) {
  if (form.dataset.model) return form.dataset.model;
  const response = await fetch(form.dataset.models, {credentials: "same-origin", headers: {Accept: "application/json"}});
  if (!response.ok) throw await refusal(response);  // e.g. 503: the service is still starting
  const body = await response.json();
  const first = (body.data || []).find((m) => m && m.id);
  form.dataset.model = first ? first.id : "";
  return form.dataset.model;
}

function chatEntry(log, role, text) {
  const item = document.createElement("li");
  item.className = "chat-" + role;
  const who = document.createElement("strong");
  who.textContent = role === "user" ? "You" : "Model";
  const said = document.createElement("span");
  said.className = "said";
  said.textContent = text;  // text, never HTML: a model's answer cannot inject markup
  item.append(who, " ", said);
  log.append(item);
  return item;
}

function playground(form) {
  const log = document.getElementById("chat-log");
  const state = document.getElementById("chat-state");
  const send = document.getElementById("chat-send");
  const history = [];
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = form.elements.message;
    const text = input.value.trim();
    if (!text || send.disabled) return;
    chatEntry(log, "user", text);
    history.push({role: "user", content: text});
    input.value = "";
    const answer = chatEntry(log, "assistant", "");
    const said = answer.querySelector(".said");
    send.disabled = true;
    state.textContent = "answering…";
    try {
      const maxTokens = parseInt(form.elements.max_tokens.value, 10);
      const body = {model: await servedModel(form), messages: history, stream: true};
      if (maxTokens > 0) body.max_tokens = maxTokens;
      await streamChat(form, body, (piece) => { said.textContent += piece; });
      history.push({role: "assistant", content: said.textContent});
      answer.dataset.done = "true";
      state.textContent = "";
    } catch (err) {
      history.pop();
      answer.classList.add("chat-failed");
      answer.dataset.done = "failed";
      said.textContent = "not answered: " + err.message;
      state.textContent = "";
    } finally {
      send.disabled = false;
      input.focus();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const chat = document.getElementById("chat");
  if (chat) playground(chat);
  for (const button of document.querySelectorAll("button[data-copy]")) copyButton(button);
  const head = document.getElementById("job");
  if (head) liveJob(head);
});
