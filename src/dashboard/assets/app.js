// Placeholder dashboard script: the worker table, refreshed on every "change" event.
'use strict';

async function loadWorkers() {
  const status = document.getElementById('status');
  const res = await fetch('/api/v1/workers', {credentials: 'same-origin'});
  if (!res.ok) {
    status.textContent = res.status === 401
        ? 'not logged in: open the /login?token=... link the coordinator printed'
        : 'error ' + res.status;
    return;
  }
  const data = await res.json();
  const body = document.querySelector('#workers tbody');
  body.replaceChildren();
  for (const w of data.workers) {
    const tr = document.createElement('tr');
    for (const v of [w.worker, w.hostname, w.state, w.activity,
                     w.slots_busy + ' / ' + w.slots]) {
      const td = document.createElement('td');
      td.textContent = v;
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  status.textContent = data.workers.length + ' worker(s)';
}

loadWorkers();
const events = new EventSource('/api/v1/events');
events.addEventListener('change', () => loadWorkers());
