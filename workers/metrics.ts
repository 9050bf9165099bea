// The worker's Prometheus endpoint (the SDK Runtime's own metrics exporter): which address it binds, from
// --metrics-address, else WHALE_METRICS_ADDRESS_<KIND>, else WHALE_METRICS_ADDRESS; off when none is set.

export interface MetricsAddress {
  bindAddress: string;
  /** Where it came from, for messages. */
  source: string;
}

/**
 * Off by default: a fixed default port would collide between the three workers `whale dev` starts on one
 * machine, and a scrape needs its address written into Prometheus' configuration anyway. The per-kind
 * variable lets one environment give each worker of a machine its own port. `kind` is the worker kind (a
 * plain string here, so this module needs nothing from main.ts, which imports it).
 */
export function metricsAddress(kind: string, option: string | undefined, env: NodeJS.ProcessEnv = process.env): MetricsAddress | null {
  const perKind = `WHALE_METRICS_ADDRESS_${kind.toUpperCase()}`;
  const candidates: [string | undefined, string][] = [[option, '--metrics-address'], [env[perKind], perKind], [env.WHALE_METRICS_ADDRESS, 'WHALE_METRICS_ADDRESS']];
  const found = candidates.find(([v]) => v !== undefined && v.trim() !== '');
  if (!found) return null;
  const [raw, source] = found as [string, string];
  const value = raw.trim();
  const m = /^(\[[0-9a-fA-F:.]+\]|[0-9]{1,3}(?:\.[0-9]{1,3}){3}|localhost):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 1 && port <= 65535)) {
    throw new Error(`${source} must be host:port with an IP address (e.g. 127.0.0.1:9464, or 0.0.0.0:9464 to be scraped from other machines); got '${raw}'`);
  }
  // The Runtime's exporter wants an IP literal.
  return { bindAddress: m[1] === 'localhost' ? `127.0.0.1:${port}` : value, source };
}
