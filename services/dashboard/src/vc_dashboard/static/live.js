// Live updates: the server pushes the page's new content over server-sent events whenever the
// cluster's watches report a change that concerns it; this replaces #live with it. No polling:
// EventSource keeps one connection open and reconnects by itself.
//
// The stream opens only after the page has loaded and stayed quiet for a moment. An open stream is a
// request that never ends, so a browser waiting for the page to settle (Playwright's networkidle: no
// request for 500 ms) would wait forever if it opened with the page. Nothing is missed meanwhile:
// the stream's first message is the page as it is when the stream opens.
(function () {
  "use strict";
  var SETTLE_MS = 1500;  // three times a settling browser's 500 ms quiet window
  var main = document.getElementById("live");
  var badge = document.getElementById("live-status");
  if (!main || !main.dataset.stream || !window.EventSource) {
    if (badge) { badge.textContent = "static"; }
    return;
  }
  function status(text, on) {
    if (badge) { badge.textContent = text; badge.className = on ? "live on" : "live off"; }
  }
  function connect() {
    var source = new EventSource(main.dataset.stream);
    source.addEventListener("open", function () { status("live", true); });
    source.addEventListener("error", function () { status("reconnecting…", false); });
    source.addEventListener("update", function (event) {
      main.innerHTML = event.data;  // HTML rendered and escaped by the server's templates
      main.dataset.updates = String(Number(main.dataset.updates || "0") + 1);
      status("live", true);
    });
    window.addEventListener("beforeunload", function () { source.close(); });
  }
  function afterLoad() { window.setTimeout(connect, SETTLE_MS); }
  if (document.readyState === "complete") {
    afterLoad();
  } else {
    window.addEventListener("load", afterLoad);
  }
})();
