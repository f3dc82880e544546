// What the web edge's end-to-end scripts share. Each script runs against
// the server at WEB_URL (an httptest server of serve's tests, or any
// acpbridge serve with WEB_TOKEN) and exits non-zero with the reason on
// stderr when a check fails.

export const url = process.env.WEB_URL;
if (!url) {
  throw new Error("WEB_URL is not set");
}
const token = process.env.WEB_TOKEN;

// headers are what every request carries.
export const headers = token ? { authorization: `Bearer ${token}` } : {};

// check fails the script with msg unless ok.
export function check(ok, msg, detail) {
  if (!ok) {
    const more = detail === undefined ? "" : "\n" + JSON.stringify(detail, null, 2);
    throw new Error("check failed: " + msg + more);
  }
}

// getJSON GETs path and returns its JSON body.
export async function getJSON(path) {
  const r = await fetch(url + path, { headers });
  check(r.ok, `GET ${path}: ${r.status}`, await r.clone().text());
  return r.json();
}

// waitFor polls cond until it holds, or fails after ms.
export async function waitFor(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting for " + what);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// run runs main, printing ok or the error, and sets the exit code.
export function run(main) {
  main().then(
    () => console.log("ok"),
    (err) => {
      console.error(err && err.stack ? err.stack : String(err));
      process.exitCode = 1;
    },
  );
}
