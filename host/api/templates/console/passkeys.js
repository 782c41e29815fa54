// Passkeys: adding one on the second-factor page, and using one at sign-in. The server's
// options come as WebAuthn's JSON (binary fields in base64url); the browser's answer goes back
// the same way, as a form field. Pages read the same without this script: the elements it drives
// are hidden until it shows them.
(function () {
  "use strict";
  if (!window.PublicKeyCredential || !navigator.credentials) { return; }

  function fromBase64url(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    while (base64.length % 4) { base64 += "="; }
    var raw = atob(base64);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { bytes[i] = raw.charCodeAt(i); }
    return bytes.buffer;
  }

  function toBase64url(buffer) {
    var bytes = new Uint8Array(buffer);
    var raw = "";
    for (var i = 0; i < bytes.length; i++) { raw += String.fromCharCode(bytes[i]); }
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function creationOptions(options) {
    var key = options.publicKey;
    key.challenge = fromBase64url(key.challenge);
    key.user.id = fromBase64url(key.user.id);
    (key.excludeCredentials || []).forEach(function (c) { c.id = fromBase64url(c.id); });
    return options;
  }

  function requestOptions(options) {
    var key = options.publicKey;
    key.challenge = fromBase64url(key.challenge);
    (key.allowCredentials || []).forEach(function (c) { c.id = fromBase64url(c.id); });
    return options;
  }

  function answer(credential) {
    var response = credential.response;
    var said = {
      id: credential.id,
      rawId: toBase64url(credential.rawId),
      type: credential.type,
      extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
      response: { clientDataJSON: toBase64url(response.clientDataJSON) }
    };
    if (response.attestationObject) {
      said.response.attestationObject = toBase64url(response.attestationObject);
    } else {
      said.response.authenticatorData = toBase64url(response.authenticatorData);
      said.response.signature = toBase64url(response.signature);
      said.response.userHandle = response.userHandle ? toBase64url(response.userHandle) : null;
    }
    return JSON.stringify(said);
  }

  function post(url, fields) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    }).then(function (reply) {
      return reply.json().catch(function () { return {}; }).then(function (body) {
        if (!reply.ok) { throw new Error(body.message || "The passkey was not accepted."); }
        return body;
      });
    });
  }

  function say(problem, text) {
    problem.textContent = text;
    problem.hidden = false;
  }

  var add = document.getElementById("passkey-add");
  if (add) {
    add.hidden = false;
    add.addEventListener("submit", function (event) {
      event.preventDefault();
      var problem = document.getElementById("passkey-problem");
      var csrf = add.elements.csrf.value;
      var name = add.elements.name.value;
      post(add.dataset.options, { csrf: csrf }).then(function (begun) {
        return navigator.credentials.create(creationOptions(begun.options)).then(function (made) {
          return post(add.dataset.answer, {
            csrf: csrf, ceremony: begun.ceremony, name: name, credential: answer(made)
          });
        });
      }).then(function () {
        window.location.reload();
      }).catch(function (error) { say(problem, error.message); });
    });
  }

  var use = document.getElementById("passkey-sign-in");
  if (use) {
    use.hidden = false;
    document.getElementById("passkey-use").addEventListener("click", function () {
      var problem = document.getElementById("passkey-problem");
      post(use.dataset.options, {}).then(function (begun) {
        return navigator.credentials.get(requestOptions(begun.options)).then(function (given) {
          return post(use.dataset.answer, { ceremony: begun.ceremony, credential: answer(given) });
        });
      }).then(function (done) {
        window.location.assign(done.next);
      }).catch(function (error) { say(problem, error.message); });
    });
  }
})();
