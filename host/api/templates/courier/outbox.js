// The couriers' app's service worker. It keeps the last shift and delivery pages for when
// the network is down, and it keeps every move (an answer to an offer, collected, delivered
// with its photo, returned, going on or off shift) that could not be sent, in order, on the
// phone (IndexedDB) until it can be: each form carries its action id, so a move sent again
// is made once by the service.
"use strict";

const PAGES = "courier-pages-v1";
const DATABASE = "courier-outbox";
const STORE = "moves";
// The forms that move a job or a shift; sign-in and the position are not kept.
const MOVES = /^\/courier\/(shift|offers\/[^/]+\/(accept|decline)|jobs\/[^/]+\/(collected|delivered|returned))$/;
const KEPT_PAGES = /^\/courier\/(|jobs\/[^/]+\/deliver)$/;
const ASSETS = ["/courier/app.css", "/courier/app.js", "/courier/icon.svg", "/courier/manifest.webmanifest"];

let refused = "";
// Set when a move came back to the sign-in page: the moves wait for the courier to sign in.
let signedOut = false;

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(PAGES).then((cache) => cache.addAll(ASSETS)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

function database() {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(DATABASE, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(STORE, { keyPath: "id", autoIncrement: true });
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}

function transaction(mode, work) {
  return database().then((db) => new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const result = work(tx.objectStore(STORE));
    tx.oncomplete = () => resolve(result.result !== undefined ? result.result : result);
    tx.onerror = () => reject(tx.error);
  }));
}

const keep = (move) => transaction("readwrite", (store) => store.add(move));
const waiting = () => transaction("readonly", (store) => store.getAll());
const forget = (id) => transaction("readwrite", (store) => store.delete(id));

async function tell(sent) {
  const moves = await waiting();
  const clients = await self.clients.matchAll({ includeUncontrolled: true });
  clients.forEach((client) => client.postMessage({ type: "outbox", waiting: moves.length, refused, sent, signedOut }));
}

let flushing = null;

// Sends what waits, oldest first; stops at the first that cannot reach the service.
function flush() {
  if (flushing) return flushing;
  flushing = (async () => {
    let sent = false;
    for (const move of await waiting()) {
      let response;
      try {
        response = await fetch(move.url, {
          method: "POST",
          body: move.body,
          headers: { "Content-Type": move.contentType },
          credentials: "same-origin",
        });
      } catch (error) {
        break;
      }
      if (response.status >= 500) break;
      // Sent on to the sign-in page: the session ended. Kept until the courier signs in.
      const landed = new URL(response.url).pathname;
      signedOut = landed === "/courier/sign-in";
      if (signedOut) break;
      await forget(move.id);
      sent = true;
      // Made: the service sent it on to the shift. Anything else: refused, and it says why.
      if (!(response.redirected && landed === "/courier/")) {
        refused = "A move sent later was refused: " + (await reason(response));
      }
    }
    await tell(sent);
  })().finally(() => { flushing = null; });
  return flushing;
}

async function reason(response) {
  const html = await response.text();
  const heading = /<h1>([^<]*)<\/h1>/.exec(html);
  return heading ? heading[1] : "status " + response.status;
}

async function move(request) {
  const copy = request.clone();
  try {
    const answer = await fetch(request);
    flush();
    return answer;
  } catch (error) {
    await keep({
      url: copy.url,
      contentType: copy.headers.get("Content-Type") || "application/x-www-form-urlencoded",
      body: await copy.arrayBuffer(),
      at: Date.now(),
    });
    if (self.registration.sync) self.registration.sync.register("outbox").catch(() => {});
    await tell(false);
    return Response.redirect("/courier/", 303);
  }
}

async function page(request) {
  const cache = await caches.open(PAGES);
  try {
    const answer = await fetch(request);
    if (answer.ok) cache.put(request, answer.clone());
    return answer;
  } catch (error) {
    const kept = await cache.match(request);
    return kept || new Response(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>No network · Courier</title><link rel=\"stylesheet\" href=\"/courier/app.css\"></head><body><main><h1>No network</h1><p>This page was not kept on the phone. What you sent is kept and goes when the network is back.</p><p><a href=\"/courier/\">The shift</a></p></main></body></html>",
      { status: 503, headers: { "Content-Type": "text/html; charset=utf-8" } },
    );
  }
}

async function asset(request) {
  const cache = await caches.open(PAGES);
  const kept = await cache.match(request);
  const fresh = fetch(request).then((answer) => {
    if (answer.ok) cache.put(request, answer.clone());
    return answer;
  });
  return kept || fresh;
}

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (url.origin !== self.location.origin) return;
  if (event.request.method === "POST" && MOVES.test(url.pathname)) {
    event.respondWith(move(event.request));
  } else if (event.request.method === "GET" && KEPT_PAGES.test(url.pathname)) {
    event.respondWith(page(event.request));
  } else if (event.request.method === "GET" && ASSETS.includes(url.pathname)) {
    event.respondWith(asset(event.request));
  }
});

self.addEventListener("sync", (event) => {
  if (event.tag === "outbox") event.waitUntil(flush());
});

self.addEventListener("message", (event) => {
  const type = event.data && event.data.type;
  if (type === "flush") event.waitUntil(flush());
  if (type === "count") event.waitUntil(tell(false));
  // Signed out: the pages kept (addresses, names, phones) leave the phone; waiting moves stay.
  if (type === "forget") event.waitUntil(caches.delete(PAGES));
});
