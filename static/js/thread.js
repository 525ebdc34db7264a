// The thread: j and k move between messages; following a link to a message (#m-...) focuses it, and one to the
// injection context (#injection-context) unfolds it; a remote image's button opens it in a new tab.
(function () {
  "use strict";
  window.mbNav(function (message) {
    return message;
  });

  function focusHash() {
    var id = window.location.hash.slice(1);
    if (!/^(m|call)-\d+$/.test(id) && id !== "injection-context") return;
    var target = document.getElementById(id);
    if (!target) return;
    if (target.tagName === "DETAILS") target.open = true;
    var holder = target.closest("details:not([open])");
    if (holder) holder.open = true;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start" });
  }

  window.addEventListener("hashchange", focusHash);
  document.addEventListener("DOMContentLoaded", focusHash);

  // A remote image or audio (chats/remote_media.py) loads only when the reviewer asks, in a new tab: the page's
  // CSP allows no other host, and the new tab gets neither this page's address (noreferrer) nor a handle on it.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-remote-url]");
    if (!button) return;
    event.preventDefault();
    var url = button.getAttribute("data-remote-url") || "";
    if (!/^https?:\/\//i.test(url)) return;
    window.open(url, "_blank", "noopener,noreferrer");
  });
})();
