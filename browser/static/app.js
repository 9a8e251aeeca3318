// The run browser's only script: opening a claim's evidence from the text, an input
// event from a link to it, and live updates from the server's event stream. Every page works without it.
"use strict";

function openCard(id, focus) {
  const card = document.getElementById(id);
  if (!card || card.tagName !== "DETAILS") return;
  card.open = true;
  document.querySelectorAll("details.card.focused").forEach((c) => c.classList.remove("focused"));
  card.classList.add("focused");
  if (focus) card.querySelector("summary").focus();
}

document.addEventListener("click", (event) => {
  const claim = event.target.closest("a.claim");
  if (!claim) return;
  event.preventDefault();
  const id = claim.getAttribute("aria-controls");
  history.replaceState(null, "", "#" + id);
  openCard(id, true);
});

// A link to an input event opens its card in the run's list (the browser scrolls to it).
document.addEventListener("click", (event) => {
  const link = event.target.closest("a.event");
  if (link) openCard(link.getAttribute("href").slice(1), false);
});

window.addEventListener("DOMContentLoaded", () => {
  if (location.hash.startsWith("#claim-") || location.hash.startsWith("#event-")) {
    openCard(location.hash.slice(1), false);
  }
  const url = document.body.dataset.events;
  if (url && window.EventSource) live(url);
});

function announce(text) {
  const region = document.getElementById("announce");
  if (region) region.textContent = text;
}

async function fragment(url, extra) {
  const target = new URL(url, location.href);
  for (const [k, v] of Object.entries(extra)) target.searchParams.set(k, v);
  const response = await fetch(target, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) throw new Error(response.status + " " + response.statusText);
  return response.text();
}

function live(url) {
  const state = document.getElementById("live-state");
  const source = new EventSource(url);
  source.onopen = () => { if (state) state.textContent = "live"; };
  source.onerror = () => { if (state) state.textContent = "live (reconnecting)"; };
  source.addEventListener("overflow", () => location.reload());
  let pending = Promise.resolve();
  source.onmessage = (message) => {
    const item = JSON.parse(message.data);
    pending = pending.then(() => update(item)).catch((err) => {
      if (state) state.textContent = "live (update failed: " + err.message + ")";
    });
  };
}

async function update(item) {
  const wait = item.run_id + ":" + item.revision;
  const table = document.querySelector("table.runs[data-live-url]");
  if (table) {
    const html = await fragment(table.dataset.liveUrl, { fragment: "rows", wait });
    const holder = document.createElement("table");
    holder.innerHTML = html;
    const body = holder.querySelector("tbody");
    if (body) {
      table.querySelector("tbody").replaceWith(body);
      const row = body.querySelector(`tr[data-run="${CSS.escape(item.run_id)}"]`);
      if (row) row.classList.add("live-flash");
    }
    announce(`Run ${item.run_id} is now at revision ${item.revision}: ${item.status}.`);
    return;
  }
  const main = document.getElementById("run-main");
  if (!main || main.dataset.run !== item.run_id) return;
  if (Number(main.dataset.revision) >= item.revision && item.record === "notification") return;
  const liveUrl = main.dataset.liveUrl;
  if (liveUrl.includes("revision=")) {
    announce(`Revision ${item.revision} of this run arrived; you are viewing an earlier one.`);
    return;
  }
  const html = await fragment(liveUrl, { fragment: "main", wait });
  const open = [...main.querySelectorAll("details[open]")].map((d) => d.id);
  main.innerHTML = html;
  main.dataset.revision = String(item.revision);
  open.forEach((id) => { const d = document.getElementById(id); if (d) d.open = true; });
  const banner = main.querySelector(".banner");
  if (banner) banner.classList.add("live-flash");
  announce(`This run is now at revision ${item.revision}: ${item.status}.`);
}

// A filter left empty stays out of the URL, so a pasted view reads as what it shows.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!form.classList.contains("filters")) return;
  form.querySelectorAll("input, select").forEach((field) => {
    if (field.value === "" && field.type !== "checkbox") field.disabled = true;
  });
  setTimeout(() => form.querySelectorAll(":disabled").forEach((f) => { f.disabled = false; }), 0);
});
