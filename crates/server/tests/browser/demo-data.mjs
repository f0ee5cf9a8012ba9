// Realistic-looking data for the README's screenshot and for trying the dashboard by hand,
// shaped like the devops cpu dataset of the benchmarks: hosts in regions, usage fields that
// drift, a daily swell; and a counter of HTTP requests (written with mode=inc).
//
//   node crates/server/tests/browser/demo-data.mjs http://127.0.0.1:8086 [hours]
//
// The counter needs `kind = "counter"` for measurement `http_requests` in the server's
// --config (see demo-config.toml beside this file).

const HOSTS = [
  ['host_0', 'eu-central-1'], ['host_1', 'eu-central-1'], ['host_2', 'us-west-1'],
  ['host_3', 'us-west-1'], ['host_4', 'ap-northeast-1'],
];
const STEP_S = 10;

/** A small deterministic generator, so that the screenshot is the same every time. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function* cpuLines(fromS, toS) {
  for (const [index, [host, region]] of HOSTS.entries()) {
    const next = random(index + 1);
    let drift = 20 + index * 8;
    for (let t = fromS; t < toS; t += STEP_S) {
      drift = Math.min(85, Math.max(3, drift + (next() - 0.5) * 2));
      const daily = 10 * Math.sin(((t % 86400) / 86400) * 2 * Math.PI + index);
      const user = Math.max(0, Math.min(100, drift + daily + (next() - 0.5) * 6));
      const system = Math.max(0, user * 0.3 + next() * 3);
      const idle = Math.max(0, 100 - user - system);
      yield `cpu,hostname=${host},region=${region},datacenter=${region}a ` +
        `usage_user=${user.toFixed(2)},usage_system=${system.toFixed(2)},usage_idle=${idle.toFixed(2)} ${t}`;
    }
  }
}

function* requestLines(fromS, toS) {
  for (const [index, [host]] of HOSTS.entries()) {
    const next = random(100 + index);
    for (let t = fromS; t < toS; t += STEP_S) {
      const daily = 1 + 0.6 * Math.sin(((t % 86400) / 86400) * 2 * Math.PI);
      const count = Math.round((40 + index * 15) * daily * (0.8 + next() * 0.4));
      yield `http_requests,hostname=${host} count=${count} ${t}`;
    }
  }
}

async function post(url, lines) {
  const response = await fetch(url, { method: 'POST', body: lines.join('\n') });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
}

async function writeAll(url, lines) {
  let batch = [];
  for (const line of lines) {
    batch.push(line);
    if (batch.length === 20000) {
      await post(url, batch);
      batch = [];
    }
  }
  if (batch.length) await post(url, batch);
}

/** Writes `hours` of data ending now into the server at `base`. */
export async function writeDemoData(base, hours) {
  const toS = Math.floor(Date.now() / 1000 / STEP_S) * STEP_S;
  const fromS = toS - hours * 3600;
  await writeAll(`${base}/write?precision=s`, cpuLines(fromS, toS));
  await writeAll(`${base}/write?precision=s&mode=inc`, requestLines(fromS, toS));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [base, hours = '48'] = process.argv.slice(2);
  if (!base) {
    console.error('usage: demo-data.mjs SERVER_URL [HOURS]');
    process.exit(2);
  }
  await writeDemoData(base.replace(/\/$/, ''), Number(hours));
  console.log(`wrote ${hours} h of cpu and http_requests to ${base}`);
}
