// The HTTP API: JSON in, JSON out, errors as ApiError(code, message). A 401 asks the page
// to log in; a network failure reports the server unreachable.
export class ApiError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

const listeners = { unauthorized: () => {}, unreachable: () => {} };
export function onApi(events) { Object.assign(listeners, events); }

export async function api(path, options = {}) {
  const init = { ...options, headers: { ...(options.body ? { "Content-Type": "application/json" } : {}) } };
  if (options.body) init.body = JSON.stringify(options.body);
  let response;
  try { response = await fetch(path, init); } catch {
    listeners.unreachable();
    throw new ApiError("SERVER_UNREACHABLE", "The server could not be reached; the page reconnects by itself.");
  }
  if (response.status === 204) return null;
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  if (!response.ok) {
    const error = body && body.error;
    if (response.status === 401 && path !== "/api/session") listeners.unauthorized();
    throw new ApiError(error ? error.code : `HTTP_${response.status}`, error ? error.message : response.statusText);
  }
  return body;
}

export const session = {
  get: () => api("/api/session"),
  login: (token) => api("/api/session", { method: "POST", body: { token } }),
  logout: () => api("/api/session", { method: "DELETE" }),
  logoutEverywhere: () => api("/api/session/all", { method: "DELETE" }),
};

// true once the server answers again
export async function serverUp() {
  try { return (await fetch("/api/healthz", { cache: "no-store" })).ok; } catch { return false; }
}
