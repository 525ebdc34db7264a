// The review page: j and k move between the rubric's questions; digits pick the focused question's options (and
// toggle a multi-label one's), y and n answer a yes-or-no question, Enter goes into a text question and Esc
// leaves it, s submits. A changed answer fires "change", on which htmx saves the draft (hx-trigger on the form).
(function () {
  "use strict";

  function isTyping(target) {
    if (!target || !target.closest) return false;
    if (target.closest("textarea, select, [contenteditable=''], [contenteditable='true']")) return true;
    var input = target.closest("input");
    return Boolean(input && input.type !== "radio" && input.type !== "checkbox");
  }

  function questions() {
    return Array.prototype.slice.call(document.querySelectorAll("#review-form [data-question]"));
  }

  function current() {
    var active = document.activeElement;
    return active && active.closest ? active.closest("#review-form [data-question]") : null;
  }

  function focusQuestion(question) {
    question.focus({ preventScroll: true });
    question.scrollIntoView({ block: "nearest" });
  }

  function choose(input) {
    if (input.type === "checkbox") input.checked = !input.checked;
    else input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  // Capture: these keys are the page's before base.js's ("n" for "next unreviewed" is "no" here).
  document.addEventListener(
    "keydown",
    function (event) {
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      var form = document.getElementById("review-form");
      if (!form) return;
      if (event.key === "Escape" && event.target.tagName === "TEXTAREA") {
        var holder = event.target.closest("[data-question]");
        if (holder) {
          event.preventDefault();
          focusQuestion(holder);
        }
        return;
      }
      if (isTyping(event.target)) return;
      var dialog = document.getElementById("keys-help");
      if (dialog && dialog.open) return;
      var all = questions();
      var question = current();
      var key = event.key;
      if (key === "j" || key === "k") {
        event.preventDefault();
        var index = all.indexOf(question);
        var next = index === -1 ? 0 : key === "j" ? Math.min(index + 1, all.length - 1) : Math.max(index - 1, 0);
        if (all[next]) focusQuestion(all[next]);
      } else if (key === "s") {
        event.preventDefault();
        form.requestSubmit(document.getElementById("submit-review"));
      } else if (question && /^[0-9]$/.test(key)) {
        var inputs = question.querySelectorAll("input[type=radio], input[type=checkbox]");
        var position = key === "0" ? 9 : Number(key) - 1;
        if (inputs[position] && question.getAttribute("data-type") !== "boolean") {
          event.preventDefault();
          choose(inputs[position]);
        }
      } else if (question && (key === "y" || key === "n") && question.getAttribute("data-type") === "boolean") {
        var answer = question.querySelector("input[value=" + (key === "y" ? "yes" : "no") + "]");
        if (answer) {
          event.preventDefault();
          choose(answer);
        }
      } else if (question && key === "Enter" && question.getAttribute("data-type") === "text") {
        var area = question.querySelector("textarea");
        if (area) {
          event.preventDefault();
          area.focus();
        }
      }
    },
    true
  );
})();
