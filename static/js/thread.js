// The thread: j and k move between messages; following a link to a message (#m-...) focuses it.
(function () {
  "use strict";
  window.mbNav(function (message) {
    return message;
  });

  function focusHash() {
    var id = window.location.hash.slice(1);
    if (!/^(m|call)-\d+$/.test(id)) return;
    var target = document.getElementById(id);
    if (!target) return;
    var holder = target.closest("details:not([open])");
    if (holder) holder.open = true;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start" });
  }

  window.addEventListener("hashchange", focusHash);
  document.addEventListener("DOMContentLoaded", focusHash);
})();
