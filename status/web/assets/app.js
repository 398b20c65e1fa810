// gitfleet web view: live updates over Server-Sent Events and arrow-key
// navigation across cluster tiles. No framework, nothing fetched from
// elsewhere.
"use strict";

// Arrow keys move the focus from tile to tile in rollout order (stages
// left to right, clusters in the order they are updated); Home and End go
// to the first and the last.
document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (!(t instanceof HTMLElement) || !t.classList.contains("tile")) return;
  const tiles = Array.from(document.querySelectorAll("a.tile"));
  const i = tiles.indexOf(t);
  let j = -1;
  switch (e.key) {
    case "ArrowRight": case "ArrowDown": j = Math.min(i + 1, tiles.length - 1); break;
    case "ArrowLeft": case "ArrowUp": j = Math.max(i - 1, 0); break;
    case "Home": j = 0; break;
    case "End": j = tiles.length - 1; break;
    default: return;
  }
  e.preventDefault();
  tiles[j].focus();
});

// A live page fetches its own address again when the status changes and
// swaps its content, keeping the focused element by id.
const live = document.body.dataset.live;
if (live) {
  let busy = false, again = false;
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const res = await fetch(location.href, { headers: { "Accept": "text/html" }, cache: "no-store" });
      if (!res.ok) throw new Error(res.statusText);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const focused = document.activeElement && document.activeElement.id;
      document.getElementById("main").replaceWith(doc.getElementById("main"));
      document.title = doc.title;
      if (focused) {
        const el = document.getElementById(focused);
        if (el) el.focus();
      }
    } catch (e) {
      // The server is busy or restarting: try again in a second.
      setTimeout(refresh, 1000);
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  };
  const events = new EventSource(live);
  events.addEventListener("change", refresh);
  // A stream that comes back may have missed a change while it was away.
  events.addEventListener("open", () => {
    if (document.body.dataset.connected === "true") refresh();
    document.body.dataset.connected = "true";
  });
}
