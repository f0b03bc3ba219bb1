// The pools page: "Copy the command" puts the agent's command on the clipboard.
(function () {
  "use strict";
  function copy(button) {
    var target = document.getElementById(button.getAttribute("data-copy-target"));
    if (!target) { return; }
    var text = target.textContent;
    var done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { select(target); });
    } else {
      select(target);
      if (document.execCommand && document.execCommand("copy")) { done(); }
    }
  }
  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest(".js-copy");
    if (button) { copy(button); }
  });
})();
