// A stand-in of Stripe.js (https://js.stripe.com/v3/) for the tests: the calls a page makes to
// draw the Payment Element on a SetupIntent and confirm it, as Stripe's reference documents
// them (`Stripe(key)`, `stripe.elements({clientSecret})`, `elements.create("payment")`,
// `element.mount(target)`, `stripe.confirmSetup({elements, redirect, confirmParams})`
// resolving to `{setupIntent}` or `{error}`). As at Stripe, the card's fields live in a frame
// of Stripe's own origin, which sends the card to Stripe's API; the page never sees them.
"use strict";
(() => {
  const origin = new URL(document.currentScript.src).origin;
  class Elements {
    constructor(key, clientSecret) {
      this.key = key;
      this.clientSecret = clientSecret;
      this.frame = null;
    }
    create(type) {
      if (type !== "payment") throw new Error("the stand-in draws the payment element only");
      return {
        mount: (target) => {
          const holder = typeof target === "string" ? document.querySelector(target) : target;
          const frame = document.createElement("iframe");
          frame.title = "Secure payment input frame";
          frame.name = "stripe-payment-element";
          frame.src = `${origin}/v3/elements/payment#${encodeURIComponent(
            JSON.stringify({ key: this.key, clientSecret: this.clientSecret }),
          )}`;
          holder.appendChild(frame);
          this.frame = frame;
        },
      };
    }
  }
  class Stripe {
    constructor(key) {
      if (typeof key !== "string" || !key.startsWith("pk_")) {
        throw new Error("Stripe() needs a publishable key");
      }
      this.key = key;
    }
    elements({ clientSecret }) {
      return new Elements(this.key, clientSecret);
    }
    confirmSetup({ elements, redirect, confirmParams }) {
      const frame = elements.frame;
      return new Promise((resolve) => {
        const answered = (event) => {
          if (event.origin !== origin || event.source !== frame.contentWindow) return;
          window.removeEventListener("message", answered);
          const answer = event.data;
          if (answer.setupIntent && answer.setupIntent.status !== "succeeded") {
            resolve({ error: { type: "invalid_request_error", message: "not confirmed" } });
          } else if (answer.setupIntent && redirect !== "if_required") {
            const back = new URL(confirmParams.return_url);
            back.searchParams.set("setup_intent", answer.setupIntent.id);
            back.searchParams.set("setup_intent_client_secret", answer.setupIntent.client_secret);
            back.searchParams.set("redirect_status", "succeeded");
            location.assign(back.href);
          } else {
            resolve(answer);
          }
        };
        window.addEventListener("message", answered);
        frame.contentWindow.postMessage({ type: "confirm" }, origin);
      });
    }
  }
  window.Stripe = (key) => new Stripe(key);
})();
