// Keys on every page: "?" lists the keys, "n" opens the next unreviewed conversation of the queue.
(function () {
  "use strict";

  function isTyping(event) {
    var target = event.target;
    if (!target || !target.closest) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']"));
  }

  function openKeys() {
    var dialog = document.getElementById("keys-help");
    if (dialog && !dialog.open) dialog.showModal();
  }

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-open-keys]")) openKeys();
  });

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || isTyping(event)) return;
    var dialog = document.getElementById("keys-help");
    if (dialog && dialog.open) return;
    if (event.key === "?") {
      event.preventDefault();
      openKeys();
    } else if (event.key === "n") {
      // A queue's page has its own "next": the form that leases the reviewer's next item.
      var nextForm = document.querySelector("form[data-next-form]");
      if (nextForm) {
        event.preventDefault();
        nextForm.requestSubmit();
        return;
      }
      var next = document.getElementById("next-unreviewed");
      if (next) {
        event.preventDefault();
        window.location.assign(next.href);
      }
    }
  });

  // Shared with the page scripts: move focus among [data-nav-item] elements with j and k.
  window.mbNav = function (focusTarget) {
    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || isTyping(event)) return;
      if (event.key !== "j" && event.key !== "k") return;
      var items = Array.prototype.slice.call(document.querySelectorAll("[data-nav-item]"));
      if (!items.length) return;
      var current = items.findIndex(function (item) {
        return item === document.activeElement || item.contains(document.activeElement);
      });
      if (current === -1) {
        // Nothing focused yet: start from the first item below the top of the window.
        current = items.findIndex(function (item) { return item.getBoundingClientRect().bottom > 0; }) - 1;
        if (event.key === "k") current += 1;
      }
      var next = event.key === "j" ? Math.min(current + 1, items.length - 1) : Math.max(current - 1, 0);
      event.preventDefault();
      var element = focusTarget(items[next]);
      element.focus({ preventScroll: true });
      items[next].scrollIntoView({ block: "start", behavior: "auto" });
    });
  };
})();
