// tenantplane console: progressive enhancements only; every page works without this file.
"use strict";

// Theme: the system's until chosen, then the choice (kept in this browser).
(function theme() {
  const saved = localStorage.getItem("tp-theme");
  if (saved) document.documentElement.dataset.theme = saved;
  document.addEventListener("DOMContentLoaded", () => {
    const toggle = document.querySelector("[data-theme-toggle]");
    if (!toggle) return;
    const current = () =>
      document.documentElement.dataset.theme ||
      (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
    const label = () => toggle.setAttribute("aria-pressed", String(current() === "dark"));
    label();
    toggle.addEventListener("click", () => {
      const next = current() === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      localStorage.setItem("tp-theme", next);
      label();
    });
  });
})();

// Live regions: an element with data-live="URL" is replaced by that URL's fragment, polled
// every data-interval ms (2 s), backing off to 30 s while nothing changes or errors occur,
// and stopping once the fragment says data-settled.
function live(element) {
  const url = element.dataset.live;
  const base = Number(element.dataset.interval || 2000);
  let delay = base;
  let timer = null;
  // The fragment last fetched: the DOM serializes markup its own way (entities, boolean
  // attributes) and scrollableByKeyboard adds attributes, so innerHTML is no comparison.
  let last = element.innerHTML.trim();
  const schedule = () => { timer = setTimeout(poll, delay); };
  async function poll() {
    if (document.hidden) { schedule(); return; }
    try {
      const response = await fetch(url, { headers: { "Accept": "text/html", "X-Console-Fragment": "1" }, credentials: "same-origin" });
      if (response.status === 401 || response.redirected) { location.reload(); return; }
      if (!response.ok) throw new Error(String(response.status));
      const html = await response.text();
      if (html.trim() !== last) {
        element.innerHTML = html;
        last = html.trim();
        scrollableByKeyboard(element);
        delay = base;
      } else {
        delay = Math.min(delay * 1.5, 30000);
      }
      if (element.querySelector("[data-settled]")) return;
    } catch (error) {
      delay = Math.min(delay * 2, 30000);
    }
    schedule();
  }
  if (!element.querySelector("[data-settled]")) schedule();
}

// A table wider than the screen scrolls inside its .table-wrap: the wrapper then takes the
// keyboard focus (tabindex 0), so that it can be scrolled without a mouse, named after the
// table's caption when it has one.
function scrollableByKeyboard(root) {
  root.querySelectorAll(".table-wrap").forEach((wrap) => {
    if (wrap.scrollWidth <= wrap.clientWidth) {
      wrap.removeAttribute("tabindex");
      return;
    }
    wrap.tabIndex = 0;
    const caption = wrap.querySelector("caption");
    if (caption && !wrap.hasAttribute("aria-label")) {
      wrap.setAttribute("role", "region");
      wrap.setAttribute("aria-label", caption.textContent.trim());
    }
  });
}

// A button enabled only once the confirmation field holds the expected text.
function confirmTyped(input) {
  const button = document.getElementById(input.dataset.confirmFor);
  const expected = input.dataset.confirmText;
  const update = () => { button.disabled = input.value !== expected; };
  input.addEventListener("input", update);
  update();
}

// Copy buttons: data-copy="ID of the element whose text is copied".
function copyButton(button) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    const source = document.getElementById(button.dataset.copy);
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      button.textContent = "Copied";
    } catch (error) {
      const range = document.createRange();
      range.selectNodeContents(source);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      button.textContent = "Selected: press Ctrl+C";
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-live]").forEach(live);
  document.querySelectorAll("[data-confirm-for]").forEach(confirmTyped);
  document.querySelectorAll("[data-copy]").forEach(copyButton);
  scrollableByKeyboard(document);
  addEventListener("resize", () => scrollableByKeyboard(document));
});
