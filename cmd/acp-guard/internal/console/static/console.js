// Refreshes the console's live part: GET /state every data-poll ms,
// replacing #live (server-rendered, escaped HTML). No framework.
(function () {
  var live = document.getElementById("live");
  if (!live) return;
  var every = parseInt(live.getAttribute("data-poll"), 10) || 2000;
  var stale = document.getElementById("stale");
  function tick() {
    fetch("/state", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) throw new Error("status " + r.status);
        return r.text();
      })
      .then(function (html) {
        // A form being submitted keeps its button: do not swap under it.
        if (!live.contains(document.activeElement) || document.activeElement === document.body) {
          live.innerHTML = html;
        }
        if (stale) stale.hidden = true;
      })
      .catch(function () { if (stale) stale.hidden = false; })
      .finally(function () { setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
