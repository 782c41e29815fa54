// Live updates, a progressive enhancement: an element with an id and `data-live="N"` is read
// again from this page's own address every N seconds and given its new content; it stops
// once the new page's element no longer asks for it. Without this script the page reads the
// same, and its own link brings it up to date.
"use strict";
for (const element of document.querySelectorAll("[id][data-live]")) {
  const every = 1000 * (Number(element.dataset.live) || 5);
  const refresh = async () => {
    try {
      const response = await fetch(location.href, { credentials: "same-origin" });
      if (!response.ok) {
        setTimeout(refresh, every);
        return;
      }
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById(element.id);
      if (!fresh) return;
      element.replaceChildren(...fresh.childNodes);
      if (fresh.hasAttribute("data-live")) {
        setTimeout(refresh, every);
      } else {
        element.removeAttribute("data-live");
      }
    } catch {
      setTimeout(refresh, every);
    }
  };
  setTimeout(refresh, every);
}
