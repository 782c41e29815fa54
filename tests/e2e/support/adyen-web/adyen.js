// A stand-in of Adyen Web 5 (adyen.js) for the tests: what a page calls to show the Drop-in
// for a Checkout session, as Adyen's reference documents it: `await AdyenCheckout({
// environment, clientKey, session: {id, sessionData}, onPaymentCompleted, onError })`, then
// `checkout.create("dropin").mount(target)`. As at Adyen, the card's fields live in a frame of
// Adyen's origin, which sends them to Adyen; the page never sees them. The Drop-in's own
// button stores the card; `onPaymentCompleted` hears `{resultCode}`.
"use strict";
(() => {
  const origin = new URL(document.currentScript.src).origin;
  window.AdyenCheckout = async (configuration) => {
    for (const needed of ["environment", "clientKey", "session"]) {
      if (!configuration[needed]) throw new Error(`AdyenCheckout needs ${needed}`);
    }
    const { clientKey, session } = configuration;
    return {
      create(type) {
        if (type !== "dropin") throw new Error("the stand-in draws the Drop-in only");
        return {
          mount(target) {
            const holder = typeof target === "string" ? document.querySelector(target) : target;
            const dropin = document.createElement("div");
            dropin.className = "adyen-checkout__dropin";
            const frame = document.createElement("iframe");
            frame.title = "Iframe for secured card fields";
            frame.className = "adyen-checkout__card-frame";
            frame.src = `${origin}/checkoutshopper/securedfields/card.html#${encodeURIComponent(
              JSON.stringify({ clientKey, session }),
            )}`;
            const pay = document.createElement("button");
            pay.type = "button";
            pay.className = "adyen-checkout__button adyen-checkout__button--pay";
            pay.textContent = "Save details";
            pay.addEventListener("click", () => {
              pay.disabled = true;
              frame.contentWindow.postMessage({ type: "submit" }, origin);
            });
            window.addEventListener("message", (event) => {
              if (event.origin !== origin || event.source !== frame.contentWindow) return;
              pay.disabled = false;
              const answer = event.data;
              if (answer.resultCode) {
                configuration.onPaymentCompleted?.(answer, this);
              } else {
                configuration.onError?.(new Error(answer.message || "Adyen did not answer"), this);
              }
            });
            dropin.append(frame, pay);
            holder.appendChild(dropin);
            return this;
          },
        };
      },
    };
  };
})();
