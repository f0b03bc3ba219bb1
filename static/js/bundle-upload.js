/* Bundle upload: drag-and-drop or file input, XMLHttpRequest to the bundles API
   (session auth + CSRF header) with a real progress bar, then "verifying…" until
   the server answers: 201 -> the bundle page; 422/4xx -> the problems, in place.
   Without JavaScript the form posts to the upload page itself. No framework. */
(function () {
  "use strict";

  function csrfToken(form) {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function formatBytes(n) {
    var units = ["bytes", "KB", "MB", "GB"];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setup(form) {
    var input = form.querySelector("input[type=file]");
    var zone = form.querySelector("[data-dropzone]");
    var nameLine = form.querySelector("[data-file-name]");
    var progress = form.querySelector("[data-progress]");
    var bar = form.querySelector("[data-progress-bar]");
    var progressText = form.querySelector("[data-progress-text]");
    var problemsBox = form.querySelector("[data-problems]");
    var button = form.querySelector("button[type=submit]");
    var maxBytes = parseInt(form.dataset.maxBytes || "0", 10);
    var chosen = null;
    var busy = false;

    function choose(file) {
      chosen = file || null;
      nameLine.textContent = chosen ? chosen.name + " · " + formatBytes(chosen.size) : "";
      problemsBox.hidden = true;
    }

    function showProblems(title, problems) {
      problemsBox.textContent = "";
      problemsBox.appendChild(element("p", "msg msg-error", title));
      if (problems && problems.length) {
        var list = element("ul", "problem-list");
        problems.forEach(function (p) {
          var item = element("li");
          item.appendChild(element("span", "problem-message", p.message || p.code));
          var meta = element("span", "muted small");
          meta.appendChild(element("code", "", p.code || ""));
          if (p.path) {
            meta.appendChild(document.createTextNode(" · "));
            meta.appendChild(element("code", "", p.path));
          }
          item.appendChild(document.createTextNode(" "));
          item.appendChild(meta);
          list.appendChild(item);
        });
        problemsBox.appendChild(list);
      }
      problemsBox.hidden = false;
    }

    function finish() {
      busy = false;
      button.disabled = false;
      zone.classList.remove("is-busy");
      progress.hidden = true;
      if (chosen) nameLine.textContent = chosen.name + " · " + formatBytes(chosen.size);
    }

    function parse(xhr) {
      try { return JSON.parse(xhr.responseText); } catch (e) { return null; }
    }

    function answered(xhr) {
      var body = parse(xhr) || {};
      if (xhr.status === 201 && body.id) {
        progressText.textContent = "Accepted. Opening the bundle page…";
        window.location.assign(form.dataset.bundleUrl.replace(
          "00000000-0000-0000-0000-000000000000", body.id));
        return;
      }
      finish();
      var title = body.message || "The upload failed (HTTP " + xhr.status + ").";
      var problems = body.problems || [];
      if (!problems.length && body.errors) problems = body.errors;
      if (!problems.length && body.file) {
        problems = [{ code: "file", message: String(body.file) }];
      }
      showProblems(title, problems);
      if (xhr.status === 422 && body.id) {
        var link = element("a", "", "Open the rejection record");
        link.href = form.dataset.bundleUrl.replace(
          "00000000-0000-0000-0000-000000000000", body.id);
        problemsBox.appendChild(element("p")).appendChild(link);
      }
    }

    function upload() {
      if (!chosen) { showProblems("Choose a bundle archive to upload.", []); return; }
      if (maxBytes && chosen.size > maxBytes) {
        showProblems("The file is " + formatBytes(chosen.size) +
          ", over the upload limit of " + formatBytes(maxBytes) + ".", []);
        return;
      }
      busy = true;
      button.disabled = true;
      zone.classList.add("is-busy");
      problemsBox.hidden = true;
      progress.hidden = false;
      bar.max = chosen.size || 1;
      bar.value = 0;
      progressText.textContent = "Uploading " + chosen.name + "…";

      var data = new FormData();
      data.append("file", chosen, chosen.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.dataset.apiUrl);
      xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
      xhr.setRequestHeader("Accept", "application/json");
      xhr.withCredentials = true;
      xhr.upload.onprogress = function (event) {
        if (!event.lengthComputable) return;
        bar.max = event.total;
        bar.value = event.loaded;
        progressText.textContent = "Uploading " + chosen.name + ": " +
          formatBytes(event.loaded) + " of " + formatBytes(event.total) + " (" +
          Math.floor((event.loaded / event.total) * 100) + " %)";
      };
      xhr.upload.onload = function () {
        bar.removeAttribute("value"); // indeterminate while the server verifies
        progressText.textContent = "Verifying… (paths, digests, signature)";
      };
      xhr.onload = function () { answered(xhr); };
      xhr.onerror = function () {
        finish();
        showProblems("The connection failed before the server answered; upload again.", []);
      };
      xhr.send(data);
    }

    input.addEventListener("change", function () { choose(input.files[0]); });
    ["dragenter", "dragover"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        if (!busy) zone.classList.add("is-over");
      });
    });
    ["dragleave", "drop"].forEach(function (type) {
      zone.addEventListener(type, function (event) {
        event.preventDefault();
        zone.classList.remove("is-over");
      });
    });
    zone.addEventListener("drop", function (event) {
      if (busy || !event.dataTransfer || !event.dataTransfer.files.length) return;
      choose(event.dataTransfer.files[0]);
    });
    form.addEventListener("submit", function (event) {
      if (!window.FormData || !window.XMLHttpRequest) return; // plain form post
      event.preventDefault();
      if (!busy) upload();
    });
    form.classList.add("is-enhanced");
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("form.js-bundle-upload"), setup);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
