// Draws the Plotly figures of the lab pages: every [data-figure] container reads
// its figure JSON from the <script type="application/json"> it names. Runs on
// load and after each htmx swap (the campaign's charts refresh while it runs).
(function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["sendDataToCloud"] };

  function draw(root) {
    if (typeof window.Plotly === "undefined") return;
    root.querySelectorAll("[data-figure]:not([data-drawn])").forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure"));
      if (!source) return;
      var figure = JSON.parse(source.textContent);
      el.setAttribute("data-drawn", "true");
      window.Plotly.newPlot(el, figure.data, figure.layout, CONFIG);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSettle", function (event) { draw(event.target); });
})();
