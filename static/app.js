// kmirror console glue. Kept tiny and free of inline script so the page can
// run under a strict Content-Security-Policy (script-src 'self').
(function () {
  "use strict";
  // Every htmx request carries the CSRF token the page was rendered with;
  // plain form posts carry it in their hidden _csrf field instead.
  document.addEventListener("htmx:configRequest", function (evt) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta) {
      evt.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
    }
  });
})();
