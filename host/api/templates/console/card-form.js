// Drives the payment provider's card form on the page that adds a live card. The page names
// the form (`data-component`) and holds the provider's card-form document (`data-document`);
// the provider's own script, loaded before this one, draws the form in its frames. When the
// provider has saved the card, its reference goes into the page's form, which puts it on file.
// Stripe's and Adyen's forms are driven here; any other provider's script registers its own
// driver under the component's name before this script runs (docs/writing-an-adapter.md):
//   (window.courierCardForms ||= {})["acme-card-form"] = (card, page) => save;
"use strict";
(() => {
  const holder = document.getElementById("card-form");
  const form = document.getElementById("attach-card");
  const problem = document.getElementById("card-form-problem");
  if (!holder || !form || !problem) return;
  const button = form.querySelector("button[type=submit]");
  const say = (text) => {
    problem.textContent = text;
    problem.hidden = false;
  };
  const saved = (reference) => {
    form.elements.provider_ref.value = reference;
    form.submit();
  };
  const ownButton = () => {
    button.hidden = true;
    const choice = document.getElementById("make-default-choice");
    if (choice) choice.hidden = true;
  };
  // What a provider's own driver is given besides its document.
  const page = {
    holder,
    say,
    ownButton,
    saved,
    stored: () => location.assign(holder.dataset.stored),
    returnUrl: new URL(holder.dataset.return, location.href).href,
  };
  const drivers = {
    // Stripe's Payment Element on the SetupIntent the adapter made.
    "stripe-payment-element": (card) => {
      if (typeof window.Stripe !== "function") return null;
      const stripe = window.Stripe(card.publishable_key);
      const elements = stripe.elements({ clientSecret: card.client_secret });
      elements.create("payment").mount(holder);
      const returnUrl = new URL(holder.dataset.return, location.href).href;
      return async () => {
        const result = await stripe.confirmSetup({
          elements,
          redirect: "if_required",
          confirmParams: { return_url: returnUrl },
        });
        if (result.error) throw new Error(result.error.message || "The card was not saved.");
        const method = result.setupIntent.payment_method;
        return typeof method === "string" ? method : method.id;
      };
    },
    // Adyen's Drop-in on the Checkout session the adapter made. Its own button stores the
    // card; Adyen announces the stored card by notification, and the cards page lists it then.
    "adyen-drop-in": (card) => {
      if (typeof window.AdyenCheckout !== "function") return null;
      ownButton();
      window
        .AdyenCheckout({
          environment: card.environment,
          clientKey: card.clientKey,
          session: card.session,
          onPaymentCompleted: (result) => {
            if (["Authorised", "Received", "Pending"].includes(result.resultCode)) {
              location.assign(holder.dataset.stored);
            } else {
              say(`The card was not stored: ${result.refusalReason || result.resultCode}.`);
            }
          },
          onError: (error) => say(error.message || "The card form failed."),
        })
        .then((checkout) => checkout.create("dropin").mount(holder))
        .catch((error) => say(error.message || "The card form did not start."));
      return () => Promise.reject(new Error("Use the card form's own button."));
    },
  };
  // The console's own drivers first: a provider's script cannot stand in for one of them.
  const name = holder.dataset.component;
  const provided = window.courierCardForms && Object.hasOwn(window.courierCardForms, name)
    ? window.courierCardForms[name]
    : null;
  const driver = Object.hasOwn(drivers, name) ? drivers[name] : provided;
  let card;
  try {
    card = JSON.parse(holder.dataset.document);
  } catch {
    card = null;
  }
  let confirm = null;
  try {
    confirm = typeof driver === "function" && card ? driver(card, page) : null;
  } catch {
    confirm = null;
  }
  if (!confirm) {
    button.disabled = true;
    say("The provider's card form did not load. Reload the page to try again.");
    return;
  }
  form.addEventListener("submit", async (event) => {
    if (form.elements.provider_ref.value) return;
    event.preventDefault();
    button.disabled = true;
    problem.hidden = true;
    try {
      saved(await confirm());
    } catch (error) {
      say(error.message);
      button.disabled = false;
    }
  });
})();
