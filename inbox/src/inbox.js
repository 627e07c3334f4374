// The inbox's one script, served from /inbox.js; no page holds a script of
// its own (the content security policy allows this file only).
//
// It keeps the address of the session this browser signed in to (/s/KEY)
// in the inbox origin's own storage, so that a run's stable address
// (/runs/ID) opens the run in that session. The storage is the origin's:
// another server on another port of the same host — which receives the
// inbox's cookie — cannot read it, and no answer of the inbox gives the
// address to a request that carries only the cookie.
(function () {
  "use strict";
  var NAME = "toolgate-inbox-session";
  // A session's address, and nothing else: a stored value of another
  // shape is never followed.
  var SHAPE = /^\/s\/[A-Za-z0-9_-]+$/;

  function stored() {
    try {
      var value = window.localStorage.getItem(NAME);
      return value && SHAPE.test(value) ? value : null;
    } catch (e) {
      return null;
    }
  }

  function keep(value) {
    try {
      window.localStorage.setItem(NAME, value);
    } catch (e) {
      // Storage refused (a private window's quota, a policy): the run
      // links then say how to sign in, as without this script.
    }
  }

  function forget() {
    try {
      window.localStorage.removeItem(NAME);
    } catch (e) {
      // Nothing was kept.
    }
  }

  function reveal(id, shown) {
    var element = document.getElementById(id);
    if (element) {
      element.hidden = !shown;
    }
    return element;
  }

  var body = document.body;

  // A signed-in page: its session's address is kept; signing out forgets it.
  var session = body.getAttribute("data-session");
  if (session && SHAPE.test(session)) {
    keep(session);
    var signOut = document.querySelector("form.sign-out");
    if (signOut) {
      signOut.addEventListener("submit", forget);
    }
  }

  var address = stored();
  var run = body.getAttribute("data-run");
  if (run !== null) {
    // A run's stable address: opened in the kept session, or the page
    // keeps saying how to sign in.
    if (address) {
      reveal("sign-in-hint", false);
      reveal("opening", true);
      window.location.replace(address + "/runs/" + encodeURIComponent(run));
    }
  } else if (address) {
    // The root page: the way back to the kept session.
    var back = reveal("back", true);
    var link = back && back.querySelector("a");
    if (link) {
      link.setAttribute("href", address + "/");
    }
  }
})();
