// Live updates: the server pushes the page's new content over server-sent events whenever the
// cluster's watches report a change that concerns it; this replaces #live with it. No polling:
// EventSource keeps one connection open and reconnects by itself.
(function () {
  "use strict";
  var main = document.getElementById("live");
  var badge = document.getElementById("live-status");
  if (!main || !main.dataset.stream || !window.EventSource) {
    if (badge) { badge.textContent = "static"; }
    return;
  }
  function status(text, on) {
    if (badge) { badge.textContent = text; badge.className = on ? "live on" : "live off"; }
  }
  var source = new EventSource(main.dataset.stream);
  source.addEventListener("open", function () { status("live", true); });
  source.addEventListener("error", function () { status("reconnecting…", false); });
  source.addEventListener("update", function (event) {
    main.innerHTML = event.data;  // HTML rendered and escaped by the server's templates
    main.dataset.updates = String(Number(main.dataset.updates || "0") + 1);
    status("live", true);
  });
  window.addEventListener("beforeunload", function () { source.close(); });
})();
