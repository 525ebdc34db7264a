// The conversation list: j and k move between rows (focusing each row's link; Enter opens it).
(function () {
  "use strict";
  window.mbNav(function (row) {
    return row.querySelector("a.row-link") || row;
  });
})();
