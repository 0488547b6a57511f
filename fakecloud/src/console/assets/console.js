// fakecloud console: live updates. Every page is complete without this
// script; it only keeps pages current and lets the audit pause. It never
// builds HTML from data: server-rendered fragments are escaped by the
// server, and audit rows are filled with textContent.
'use strict';

(() => {
  // Parts of a page that fetch their fragment again whenever their event
  // stream says something changed.
  for (const part of document.querySelectorAll('[data-live-source]')) {
    let running = false;
    let again = false;
    const refresh = async () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        const response = await fetch(part.dataset.liveFragment, { credentials: 'same-origin' });
        if (response.status === 401) {
          window.location.assign('/console/login');
          return;
        }
        if (response.ok) {
          replaceKeepingFocus(part, await response.text());
        }
      } catch (_) {
        // The next change tries again.
      } finally {
        running = false;
        if (again) {
          again = false;
          refresh();
        }
      }
    };
    new EventSource(part.dataset.liveSource).addEventListener('change', refresh);
  }

  // Swaps in a fragment and gives keyboard focus back to the same link or
  // control, so a refresh does not throw a keyboard user back to the top.
  function replaceKeepingFocus(part, html) {
    const active = document.activeElement;
    const selector = active && part.contains(active) ? selectorOf(active) : null;
    part.innerHTML = html;
    const same = selector && part.querySelector(selector);
    if (same) {
      same.focus();
    }
  }

  function selectorOf(element) {
    if (element.id) {
      return '#' + CSS.escape(element.id);
    }
    const href = element.getAttribute('href');
    return href ? 'a[href="' + CSS.escape(href) + '"]' : null;
  }

  // The audit: new calls on top as they arrive; paused, they wait.
  const log = document.getElementById('audit-log');
  if (log) {
    const rows = log.tBodies[0];
    const pause = document.getElementById('audit-pause');
    const held = document.getElementById('audit-held');
    const maxRows = 500;
    let paused = false;
    let waiting = [];

    const show = (calls) => {
      for (const call of calls) {
        rows.insertBefore(row(call), rows.firstChild);
      }
      while (rows.rows.length > maxRows) {
        rows.deleteRow(-1);
      }
    };

    new EventSource(log.dataset.stream).addEventListener('calls', (event) => {
      const calls = JSON.parse(event.data);
      if (paused) {
        waiting = waiting.concat(calls);
        held.textContent = 'Paused: ' + waiting.length + ' new calls held back.';
      } else {
        show(calls);
      }
    });

    pause.addEventListener('click', () => {
      paused = !paused;
      pause.setAttribute('aria-pressed', String(paused));
      pause.textContent = paused ? 'Resume' : 'Pause';
      if (paused) {
        held.textContent = 'Paused: new calls are held back.';
      } else {
        show(waiting);
        waiting = [];
        held.textContent = '';
      }
    });
  }

  function row(call) {
    const tr = document.createElement('tr');
    tr.className = 'arrived';
    for (const text of [call.time, call.account, call.caller, call.method]) {
      tr.insertCell().textContent = text;
    }
    const path = tr.insertCell();
    path.className = 'path';
    path.textContent = call.path;
    const status = document.createElement('span');
    status.className = call.class;
    status.textContent = String(call.status);
    tr.insertCell().appendChild(status);
    const agent = tr.insertCell();
    agent.className = 'agent';
    agent.textContent = call.user_agent;
    return tr;
  }
})();
