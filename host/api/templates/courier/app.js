// The couriers' app's one script. Every page works without it; with it the shift page
// follows the service (offers, moves), counts offers down, sends the phone's position while
// online, the delivery form gets a signature pad and a photo preview, and the service worker
// keeps moves made without a network until they can be sent.
"use strict";

(function () {
  const POLL_MS = 5000;
  const POSITION_EVERY_MS = 15000;
  const POSITION_MOVED_METRES = 50;

  const outboxStatus = document.getElementById("outbox-status");

  let waitingToSend = 0;

  function showOutbox(waiting, refused, signedOut) {
    waitingToSend = waiting;
    if (!outboxStatus) return;
    const parts = [];
    if (waiting > 0) {
      parts.push(waiting === 1 ? "1 action waiting to be sent" : waiting + " actions waiting to be sent");
      if (signedOut) parts.push("sign in again to send them");
    }
    if (refused) parts.push(refused);
    outboxStatus.textContent = parts.join(". ");
    outboxStatus.hidden = parts.length === 0;
  }

  // The service worker: the last pages for a dead zone, and the outbox.
  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/courier/outbox.js", { scope: "/courier/" }).catch(() => {});
    navigator.serviceWorker.addEventListener("message", (event) => {
      const data = event.data || {};
      if (data.type === "outbox") {
        showOutbox(data.waiting, data.refused, data.signedOut);
        if (data.sent && data.waiting === 0 && document.getElementById("shift")) {
          location.reload();
        }
      }
    });
    const ask = (type) => navigator.serviceWorker.ready.then((r) => r.active && r.active.postMessage({ type }));
    ask("count");
    window.addEventListener("online", () => ask("flush"));
    // The network may come back without the browser noticing: while moves wait, try often.
    setInterval(() => { if (waitingToSend > 0) ask("flush"); }, POLL_MS);
    setInterval(() => ask("flush"), 60000);
  }

  // Signing out while moves wait would strand them: it waits until they are sent. Signed
  // out, the pages kept on the phone are forgotten.
  document.querySelectorAll("form[action='/courier/sign-out']").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (waitingToSend > 0) {
        event.preventDefault();
        event.stopImmediatePropagation();
        showOutbox(waitingToSend, "Sign out once they are sent", false);
        return;
      }
      if (navigator.serviceWorker && navigator.serviceWorker.controller) {
        navigator.serviceWorker.controller.postMessage({ type: "forget" });
      }
    });
  });
  // Signed in again: what waited goes now.
  if (document.getElementById("shift") && "serviceWorker" in navigator) {
    navigator.serviceWorker.ready.then((r) => r.active && r.active.postMessage({ type: "flush" }));
  }

  // One tap sends a form once: its button is disabled while it goes.
  document.querySelectorAll("form").forEach((form) => {
    form.addEventListener("submit", () => {
      setTimeout(() => form.querySelectorAll("button[type=submit]").forEach((b) => { b.disabled = true; }), 0);
    });
  });

  // Offers count down to their expiry; one that runs out says so.
  const countdowns = Array.from(document.querySelectorAll("time.countdown"));
  function tick() {
    const now = Date.now();
    countdowns.forEach((time) => {
      const left = Math.max(0, Math.floor((Date.parse(time.getAttribute("datetime")) - now) / 1000));
      const offer = time.closest(".offer");
      if (left === 0) {
        time.parentElement.textContent = "This offer ran out.";
        if (offer) {
          offer.classList.add("expired");
          offer.querySelectorAll(".answer button").forEach((b) => { b.disabled = true; });
        }
      } else {
        time.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      }
    });
  }
  if (countdowns.length) { tick(); setInterval(tick, 1000); }

  // The shift page follows the service: it reloads when what it shows has changed.
  const shift = document.getElementById("shift");
  if (shift) {
    const version = shift.dataset.version;
    setInterval(() => {
      if (document.hidden || !navigator.onLine) return;
      fetch("/courier/state", { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then((r) => (r.ok && (r.headers.get("content-type") || "").startsWith("application/json") ? r.json() : null))
        .then((state) => { if (state && state.version !== version) location.reload(); })
        .catch(() => {});
    }, POLL_MS);
  }

  // While online, the phone's position goes to the service, at most every 15 s unless the
  // phone moved 50 m; paused while the page is hidden.
  const positionStatus = document.getElementById("position-status");
  if (shift && shift.dataset.online === "true" && positionStatus) {
    if (!("geolocation" in navigator)) {
      positionStatus.textContent = "This browser cannot tell where the phone is: offers go by where you were last seen.";
      positionStatus.hidden = false;
    } else {
      let watch = null;
      let last = null;
      const metres = (a, b) => {
        const rad = Math.PI / 180;
        const x = (b.longitude - a.longitude) * rad * Math.cos(((a.latitude + b.latitude) / 2) * rad);
        const y = (b.latitude - a.latitude) * rad;
        return Math.sqrt(x * x + y * y) * 6371000;
      };
      const send = (position) => {
        const here = position.coords;
        const now = Date.now();
        if (last && now - last.at < POSITION_EVERY_MS && metres(last.coords, here) < POSITION_MOVED_METRES) return;
        last = { at: now, coords: { latitude: here.latitude, longitude: here.longitude } };
        const body = new URLSearchParams({ csrf: shift.dataset.csrf, latitude: String(here.latitude), longitude: String(here.longitude) });
        fetch("/courier/position", { method: "POST", body, credentials: "same-origin" })
          .then((r) => {
            positionStatus.textContent = r.ok ? "Your position is shared while you are online." : "Your position could not be sent just now.";
            positionStatus.hidden = false;
          })
          .catch(() => {});
      };
      const refused = (error) => {
        positionStatus.textContent = error.code === error.PERMISSION_DENIED
          ? "Location is off for this app, so offers go by where you were last seen: you may get fewer, or farther, offers. Allow location for this site in the browser's settings."
          : "The phone cannot find where it is just now; offers go by where you were last seen.";
        positionStatus.hidden = false;
      };
      const start = () => {
        if (watch === null) {
          watch = navigator.geolocation.watchPosition(send, refused, { enableHighAccuracy: true, maximumAge: 10000, timeout: 30000 });
        }
      };
      const stop = () => {
        if (watch !== null) { navigator.geolocation.clearWatch(watch); watch = null; }
      };
      document.addEventListener("visibilitychange", () => (document.hidden ? stop() : start()));
      start();
    }
  }

  // The delivery form: a photo preview, a signature drawn on the screen (sent as PNG), and
  // the proof the job needs checked before sending.
  const photo = document.getElementById("photo");
  const preview = document.getElementById("photo-preview");
  if (photo && preview) {
    photo.addEventListener("change", () => {
      const file = photo.files && photo.files[0];
      if (file) { preview.src = URL.createObjectURL(file); preview.hidden = false; } else { preview.hidden = true; }
    });
  }
  const pad = document.getElementById("signature-pad");
  const signature = document.getElementById("signature");
  const form = document.getElementById("delivery-form");
  if (pad && signature && form) {
    pad.hidden = false;
    document.getElementById("signature-needs-script").hidden = true;
    const clear = document.getElementById("signature-clear");
    clear.hidden = false;
    const context = pad.getContext("2d");
    context.lineWidth = 4;
    context.lineCap = "round";
    context.lineJoin = "round";
    context.strokeStyle = "#000000";
    let drawing = false;
    let signed = false;
    const at = (event) => {
      const box = pad.getBoundingClientRect();
      return { x: ((event.clientX - box.left) * pad.width) / box.width, y: ((event.clientY - box.top) * pad.height) / box.height };
    };
    pad.addEventListener("pointerdown", (event) => {
      drawing = true;
      pad.setPointerCapture(event.pointerId);
      const p = at(event);
      context.beginPath();
      context.moveTo(p.x, p.y);
      context.lineTo(p.x + 0.1, p.y + 0.1);
      context.stroke();
      event.preventDefault();
    });
    pad.addEventListener("pointermove", (event) => {
      if (!drawing) return;
      const p = at(event);
      context.lineTo(p.x, p.y);
      context.stroke();
      event.preventDefault();
    });
    const end = () => {
      if (!drawing) return;
      drawing = false;
      signed = true;
      signature.value = pad.toDataURL("image/png");
      document.getElementById("signature-missing").hidden = true;
    };
    pad.addEventListener("pointerup", end);
    pad.addEventListener("pointercancel", end);
    clear.addEventListener("click", () => {
      context.clearRect(0, 0, pad.width, pad.height);
      signature.value = "";
      signed = false;
    });
    form.addEventListener("submit", (event) => {
      if (form.dataset.signatureRequired === "true" && !signed) {
        event.preventDefault();
        event.stopImmediatePropagation();
        document.getElementById("signature-missing").hidden = false;
        pad.scrollIntoView({ block: "center" });
      }
    }, true);
  }
})();
