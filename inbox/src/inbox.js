// The inbox's one script, served from /inbox.js; no page holds a script of
// its own (the content security policy allows this file only). Every page
// works without it.
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

  // The list and a run's page follow the runs as they change, through the
  // session's event stream. An event says which run changed and how, in
  // one word; nothing it carries is written into the page. The list is
  // read again from its own address and its rows replaced; a run's page
  // whose run changed says so, before the operator acts, shows where the
  // run stands now, and its buttons stop acting (the server refuses a
  // stale decision anyway).
  var EVENTS = /^\/s\/[A-Za-z0-9_-]+\/events\?since=[0-9]+$/;
  var HOW = {
    waiting: ": it waits again, on a new turn",
    decided: ": it was decided elsewhere",
    resumed: ": its host resumed it",
    expired: ": it expired"
  };

  function follow(live) {
    var events = live.getAttribute("data-events");
    if (!events || !EVENTS.test(events)) {
      return;
    }
    var source = new EventSource(events);
    window.addEventListener("pagehide", function () {
      source.close();
    });
    if (live.getAttribute("data-live") === "list") {
      followList(source);
    } else if (live.getAttribute("data-live") === "run") {
      followRun(source, live);
    }
  }

  // The element `selector` finds in this page, replaced by the one it
  // finds in `fresh` (the page read again, as the inbox wrote it).
  function swap(fresh, selector) {
    var old = document.querySelector(selector);
    var next = fresh.querySelector(selector);
    if (old && next) {
      old.parentNode.replaceChild(document.importNode(next, true), old);
    }
  }

  // This page, as the inbox answers for it now; a page that is not it (a
  // session that ended leads elsewhere) is no answer.
  function readAgain() {
    return window
      .fetch(window.location.href, { credentials: "same-origin" })
      .then(function (answer) {
        if (!answer.ok || answer.redirected) {
          throw new Error("not this page");
        }
        return answer.text();
      })
      .then(function (text) {
        return new DOMParser().parseFromString(text, "text/html");
      });
  }

  function followList(source) {
    var busy = false;
    var again = false;
    function read() {
      readAgain()
        .then(function (fresh) {
          swap(fresh, "#count");
          swap(fresh, "#listing");
        })
        .catch(function () {
          // The list stays as it was; the next change reads it again.
        })
        .then(function () {
          busy = false;
          if (again) {
            again = false;
            soon();
          }
        });
    }
    function soon() {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      // Changes that come together are read once.
      window.setTimeout(read, 200);
    }
    source.addEventListener("run", soon);
  }

  function followRun(source, live) {
    var run = live.getAttribute("data-run-id");
    var stale = false;
    // A form sent from this page leads to the answer's own page: the
    // change it makes is not news here.
    var sent = false;
    function block(event) {
      if (stale) {
        event.preventDefault();
      } else {
        sent = true;
      }
    }
    var forms = document.querySelectorAll("main form");
    for (var i = 0; i < forms.length; i++) {
      forms[i].addEventListener("submit", block);
    }
    source.addEventListener("run", function (event) {
      var change;
      try {
        change = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      if (sent || !change || (change.run !== null && change.run !== run)) {
        return;
      }
      stale = true;
      var how = live.querySelector(".how");
      if (how) {
        how.textContent = HOW.hasOwnProperty(change.kind) ? HOW[change.kind] : "";
      }
      live.hidden = false;
      body.classList.add("stale");
      for (var k = 0; k < forms.length; k++) {
        var buttons = forms[k].querySelectorAll("button, input[type=submit]");
        for (var j = 0; j < buttons.length; j++) {
          buttons[j].disabled = true;
        }
      }
      // Where the run stands now, in the page's own words.
      readAgain()
        .then(function (fresh) {
          swap(fresh, "main p.state");
        })
        .catch(function () {
          // The banner says it changed; its link shows how.
        });
    });
  }

  // A signed-in page: its session's address is kept; signing out forgets it.
  var session = body.getAttribute("data-session");
  if (session && SHAPE.test(session)) {
    keep(session);
    var signOut = document.querySelector("form.sign-out");
    if (signOut) {
      signOut.addEventListener("submit", forget);
    }
  }

  // Live pages (see follow below).
  var live = document.getElementById("live");
  if (live && window.EventSource) {
    follow(live);
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
