// The thread: a long one comes in windows. The page holds the first (or the one around the message asked for);
// each part not loaded yet is a gap (li.window-gap) that loads, from the chunk endpoint, as the reader scrolls near
// it or clicks it. j and k move between messages, loading the next part at a gap; following a link to a message
// (#m-...) focuses it, loading the window around it first when it is not on the page, and one to the injection
// context (#injection-context) unfolds it; a remote image's button opens it in a new tab.
(function () {
  "use strict";

  var list = document.querySelector("ol.messages[data-chunk-url]");
  var chunkSize = 100;
  var observer = null;

  function items() {
    return list ? Array.prototype.slice.call(list.querySelectorAll(":scope > li.message-item")) : [];
  }

  function positionOf(li) {
    return Number(li.getAttribute("data-position"));
  }

  function chunkUrl(params) {
    var url = new URL(list.getAttribute("data-chunk-url"), window.location.href);
    Object.keys(params).forEach(function (key) {
      url.searchParams.set(key, String(params[key]));
    });
    return url.toString();
  }

  function pageUrl(params) {
    var url = new URL(list.getAttribute("data-page-url"), window.location.href);
    Object.keys(params).forEach(function (key) {
      url.searchParams.set(key, String(params[key]));
    });
    return url.pathname + url.search;
  }

  // A gap between the loaded positions `after` (-1: none) and `before` (the path's length: none), as the page
  // renders it (templates/jinja2/chats/thread.html).
  function makeGap(after, before) {
    var gap = document.createElement("li");
    gap.className = "window-gap";
    gap.setAttribute("data-after", String(after));
    gap.setAttribute("data-before", String(before));
    var link = document.createElement("a");
    var total = list.getAttribute("data-total");
    link.href = pageUrl(after >= 0 ? { after: after } : {});
    link.textContent =
      "Messages " + (after + 2) + "–" + before + " of " + total + " are not shown yet: show them";
    gap.appendChild(link);
    return gap;
  }

  function rebuildGaps() {
    Array.prototype.forEach.call(list.querySelectorAll(":scope > li.window-gap"), function (gap) {
      if (observer) observer.unobserve(gap);
      gap.remove();
    });
    var total = Number(list.getAttribute("data-total"));
    var previous = -1;
    items().forEach(function (li) {
      var position = positionOf(li);
      if (position > previous + 1) list.insertBefore(makeGap(previous, position), li);
      previous = position;
    });
    if (previous + 1 < total) list.appendChild(makeGap(previous, total));
    watchGaps();
  }

  // Put the chunk's messages in their places (by position; one already on the page is kept as it is), let htmx
  // wire their feedback forms, and redraw the gaps. The messages inserted, in order.
  function insert(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var added = [];
    Array.prototype.forEach.call(template.content.querySelectorAll("li.message-item"), function (li) {
      var position = positionOf(li);
      var present = items();
      if (present.some(function (other) { return positionOf(other) === position; })) return;
      var next = present.find(function (other) { return positionOf(other) > position; });
      list.insertBefore(li, next || null);
      added.push(li);
    });
    rebuildGaps();
    if (window.htmx) added.forEach(function (li) { window.htmx.process(li); });
    return added;
  }

  function fetchChunk(params) {
    return fetch(chunkUrl(params), { credentials: "same-origin", headers: { Accept: "text/html" } }).then(
      function (response) {
        if (!response.ok) throw new Error("chunk " + response.status);
        return response.text();
      }
    ).then(insert);
  }

  // Load a gap's messages: from its top (reading down), or from its bottom (reading up into it).
  function loadGap(gap, fromBottom) {
    if (gap.mbPending) return gap.mbPending; // already on its way: wait for the same load
    gap.setAttribute("data-loading", "true");
    gap.setAttribute("aria-busy", "true");
    var after = Number(gap.getAttribute("data-after"));
    var before = Number(gap.getAttribute("data-before"));
    var start = fromBottom ? Math.max(after, before - 1 - chunkSize) : after;
    var params = { limit: Math.min(chunkSize, before - 1 - start) };
    if (start >= 0) params.after = start;
    gap.mbPending = fetchChunk(params).finally(function () {
      gap.mbPending = null;
      gap.removeAttribute("data-loading");
      gap.removeAttribute("aria-busy");
    });
    return gap.mbPending;
  }

  function loadAround(messageId) {
    return fetchChunk({ around: messageId });
  }

  function watchGaps() {
    if (!observer) return;
    Array.prototype.forEach.call(list.querySelectorAll(":scope > li.window-gap"), function (gap) {
      observer.observe(gap);
    });
  }

  if (list && "IntersectionObserver" in window) {
    observer = new IntersectionObserver(
      function (entries) {
        entries.forEach(function (entry) {
          if (!entry.isIntersecting) return;
          if (entry.target.mbPending) return;
          loadGap(entry.target, entry.boundingClientRect.top < 0).catch(function () {});
        });
      },
      { rootMargin: "1200px 0px" }
    );
    watchGaps();
  }

  // j and k: at a gap, load the messages beyond it first.
  window.mbNav(
    function (message) {
      return message;
    },
    function (direction, current) {
      if (!list) return null;
      var li = current.closest("li.message-item");
      var beyond = li && (direction > 0 ? li.nextElementSibling : li.previousElementSibling);
      if (!beyond || !beyond.classList.contains("window-gap")) return null;
      return loadGap(beyond, direction < 0);
    }
  );

  function reveal(target) {
    if (target.tagName === "DETAILS") target.open = true;
    var holder = target.closest("details:not([open])");
    if (holder) holder.open = true;
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start" });
  }

  function focusHash() {
    var id = window.location.hash.slice(1);
    if (!/^(m|call)-\d+$/.test(id) && id !== "injection-context") return;
    var target = document.getElementById(id);
    if (target) {
      reveal(target);
      return;
    }
    var message = /^m-(\d+)$/.exec(id);
    if (!message || !list) return;
    loadAround(message[1]).then(function () {
      var loaded = document.getElementById(id);
      if (loaded && window.location.hash === "#" + id) reveal(loaded);
    }).catch(function () {});
  }

  window.addEventListener("hashchange", focusHash);
  document.addEventListener("DOMContentLoaded", focusHash);

  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    var link = event.target.closest && event.target.closest("a[href]");
    if (!link || !list) return;
    // A gap's link: load it here rather than open its page.
    var gap = link.closest("li.window-gap");
    if (gap) {
      event.preventDefault();
      loadGap(gap, false).then(function (added) {
        if (added && added.length) reveal(added[0].querySelector("[data-nav-item]") || added[0]);
      }).catch(function () {});
      return;
    }
    // A link to a message or call outside the window (?around=...#m-... on this same path): load it in place.
    var url = new URL(link.href, window.location.href);
    var around = url.searchParams.get("around");
    if (!around || url.pathname !== window.location.pathname || !/^#(m|call)-\d+$/.test(url.hash)) return;
    var here = new URLSearchParams(window.location.search);
    if ((url.searchParams.get("at") || "") !== (here.get("at") || "")) return;
    event.preventDefault();
    var go = function () {
      if (window.location.hash === url.hash) focusHash();
      else window.location.hash = url.hash;
    };
    if (document.getElementById(url.hash.slice(1))) go();
    else loadAround(around).then(go).catch(function () {});
  });

  var lastUnanswered = -1;
  // "Next unanswered tool call": the server finds it past the focused message, however far; its window is loaded
  // and the call focused. Said through the live region when there is none.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-next-unanswered]");
    if (!link || !list || event.defaultPrevented || event.button !== 0) return;
    event.preventDefault();
    // Past the focused message; from the link itself (a click focuses it), past the call it found last.
    var active = document.activeElement;
    var current = active && active.closest ? active.closest("li.message-item") : null;
    var from = current ? positionOf(current) : active === link ? lastUnanswered : -1;
    fetchChunk({ unanswered_after: from }).then(function () {
      var found = items().filter(function (li) { return positionOf(li) > from; }).map(function (li) {
        return li.querySelector(".tool-call.unanswered");
      }).find(Boolean);
      if (!found) return;
      lastUnanswered = positionOf(found.closest("li.message-item"));
      reveal(found);
    }).catch(function () {
      var announcer = document.getElementById("announcer");
      if (announcer) announcer.textContent = "No unanswered tool call after this point.";
    });
  });

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
