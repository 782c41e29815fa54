(function () {
  "use strict";
  var root = document.getElementById("main");
  if (!root || root.getAttribute("data-live") !== "true") {
    return;
  }
  var url = location.pathname.replace(/\/+$/, "") + "/state";
  var wait = Number(root.getAttribute("data-poll-ms")) || 5000;
  var failures = 0;

  function byId(id) {
    return document.getElementById(id);
  }
  function setText(id, value) {
    var el = byId(id);
    if (el && el.textContent !== value) {
      el.textContent = value;
    }
  }
  function setAttr(id, name, value) {
    var el = byId(id);
    if (el && el.getAttribute(name) !== value) {
      el.setAttribute(name, value);
    }
  }
  function show(id, visible) {
    var el = byId(id);
    if (el) {
      el.hidden = !visible;
    }
  }
  function place(id, point) {
    if (point) {
      setAttr(id, "cx", String(point.x));
      setAttr(id, "cy", String(point.y));
    }
  }
  function timeline(steps) {
    var list = byId("timeline");
    var items = steps.map(function (step) {
      var item = document.createElement("li");
      item.className = "step " + step.state;
      if (step.state === "current") {
        item.setAttribute("aria-current", "step");
      }
      var label = document.createElement("span");
      label.className = "label";
      label.textContent = step.label;
      var spoken = document.createElement("span");
      spoken.className = "visually-hidden";
      spoken.textContent = " (" + step.spoken + ")";
      label.appendChild(spoken);
      item.appendChild(label);
      if (step.at_text) {
        var time = document.createElement("time");
        time.setAttribute("datetime", step.at);
        time.textContent = step.at_text;
        item.appendChild(time);
      }
      return item;
    });
    list.replaceChildren.apply(list, items);
  }
  function apply(state) {
    root.setAttribute("data-status", state.status);
    document.title = state.headline + " \u00b7 Delivery " + state.reference;
    setText("status-headline", state.headline);
    setText("status-detail", state.detail);
    var card = byId("status-card");
    if (card) {
      card.classList.toggle("ended", state.ended);
    }
    show("estimate", !!state.estimate);
    if (state.estimate) {
      setText("eta-text", state.estimate.text);
      setText("eta-remaining", state.estimate.remaining);
      setText("eta-note", state.estimate.note || "");
      show("eta-note", !!state.estimate.note);
    }
    show("proof", !!state.proof_outcome);
    setText("proof-outcome", state.proof_outcome || "");
    setText("pickup-area", state.pickup_area);
    setText("dropoff-area", state.dropoff_area);
    timeline(state.timeline);
    var map = state.map;
    setAttr("map", "viewBox", map.view_box);
    setAttr("map-streets", "d", map.streets);
    setAttr("map-route", "d", map.route);
    setAttr("map-leg", "d", map.courier_leg);
    place("map-pickup", map.pickup);
    place("map-dropoff", map.dropoff);
    place("map-courier", map.courier);
    setAttr("map-courier", "visibility", map.courier ? "visible" : "hidden");
    show("legend-courier", !!map.courier);
    setText("map-desc", map.description);
    setText("updated-at", state.updated_text);
    byId("updated-at").setAttribute("datetime", state.updated_at);
    if (state.ended) {
      setText("live-note", "This delivery has ended.");
    }
  }
  function poll() {
    fetch(url, { cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 404) {
          setText("live-note", "This tracking page has closed.");
          return null;
        }
        if (!response.ok) {
          throw new Error("status " + response.status);
        }
        return response.json();
      })
      .then(function (state) {
        if (!state) {
          return;
        }
        failures = 0;
        apply(state);
        if (state.poll_after_ms) {
          wait = state.poll_after_ms;
          setTimeout(poll, wait);
        }
      })
      .catch(function () {
        failures += 1;
        setTimeout(poll, Math.min(wait * Math.pow(2, failures), 60000));
      });
  }
  setTimeout(poll, wait);
})();
