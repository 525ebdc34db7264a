// Keys on every page: "?" lists the keys, "n" opens the next unreviewed conversation of the queue; what htmx
// updates is announced, and focus is never left on nothing after an update.
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

  // The navigation's menus (<details> in .nav-menu) load their items from data-menu-url when first opened
  // (toggle does not bubble: listened for while capturing), close on Escape, giving focus back to their summary,
  // and on a click outside them.
  document.addEventListener(
    "toggle",
    function (event) {
      var menu = event.target;
      if (!menu.matches || !menu.matches(".nav-menu details[data-menu-url]") || !menu.open) return;
      if (menu.hasAttribute("data-menu-loaded") || !window.htmx) return;
      menu.setAttribute("data-menu-loaded", "");
      window.htmx.ajax("GET", menu.getAttribute("data-menu-url"), {
        target: menu.querySelector(".nav-menu-items"),
        swap: "innerHTML",
      });
    },
    true
  );
  function closeMenus(except) {
    document.querySelectorAll(".nav-menu details[open]").forEach(function (menu) {
      if (menu !== except) menu.open = false;
    });
  }
  document.addEventListener("click", function (event) {
    closeMenus(event.target.closest ? event.target.closest(".nav-menu details") : null);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var menu = event.target.closest ? event.target.closest(".nav-menu details[open]") : null;
    if (!menu) return;
    menu.open = false;
    menu.querySelector("summary").focus();
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

  // After an htmx update: say what it did through the page's polite live region (an element of the new content
  // marked data-announce), and, when the update took away the element that had focus (the button that sent it),
  // give focus to the new content: its [data-swap-focus] element, else its first control, else itself.
  document.addEventListener("htmx:afterSettle", function (event) {
    var root = event.target;
    if (!root || root.nodeType !== 1 || !root.isConnected) return;
    var news = root.matches("[data-announce]") ? root : root.querySelector("[data-announce]");
    var announcer = document.getElementById("announcer");
    if (news && announcer) announcer.textContent = news.textContent.trim();
    var active = document.activeElement;
    if (active && active !== document.body && active.isConnected) return;
    var target =
      root.querySelector("[data-swap-focus]") ||
      root.querySelector("input:not([type=hidden]), select, textarea, button, a[href]") ||
      root;
    if (target === root && !root.hasAttribute("tabindex")) root.setAttribute("tabindex", "-1");
    target.focus();
  });

  // Shared with the page scripts: move focus among [data-nav-item] elements with j and k. `edge`, when given, is
  // asked before each move (direction 1 or -1, the focused item): a promise means more items are on their way
  // (a long thread's next chunk), and the move is made once they are in (asked again, a few times at most).
  window.mbNav = function (focusTarget, edge) {
    function step(direction, tries) {
      var items = Array.prototype.slice.call(document.querySelectorAll("[data-nav-item]"));
      if (!items.length) return;
      var current = items.findIndex(function (item) {
        return item === document.activeElement || item.contains(document.activeElement);
      });
      if (current !== -1 && edge && tries < 3) {
        var pending = edge(direction, items[current]);
        if (pending) {
          var again = function () { step(direction, tries + 1); };
          pending.then(again, function () { step(direction, 3); });
          return;
        }
      }
      if (current === -1) {
        // Nothing focused yet: start from the first item below the top of the window.
        current = items.findIndex(function (item) { return item.getBoundingClientRect().bottom > 0; }) - 1;
        if (direction < 0) current += 1;
      }
      var next = direction > 0 ? Math.min(current + 1, items.length - 1) : Math.max(current - 1, 0);
      var element = focusTarget(items[next]);
      element.focus({ preventScroll: true });
      items[next].scrollIntoView({ block: "start", behavior: "auto" });
    }

    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || isTyping(event)) return;
      if (event.key !== "j" && event.key !== "k") return;
      if (!document.querySelector("[data-nav-item]")) return;
      event.preventDefault();
      step(event.key === "j" ? 1 : -1, 0);
    });
  };
})();
