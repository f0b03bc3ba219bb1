// The criterion page's chart: a click on a repetition opens its run (its id is the
// point's customdata). The run URL pattern is this script's data-run-url.
(function (script) {
  "use strict";
  var pattern = script.getAttribute("data-run-url");
  var placeholder = "00000000-0000-0000-0000-000000000000";
  window.addEventListener("load", function () {
    var plot = document.querySelector('[data-testid="chart-criterion"] [data-figure]');
    if (!plot || typeof plot.on !== "function") return;
    plot.on("plotly_click", function (event) {
      var run = event.points && event.points[0] && event.points[0].customdata;
      if (run) window.location.href = pattern.replace(placeholder, run);
    });
  });
})(document.currentScript);
