// Where a run's page is in the Temporal Web UI, from the connection settings: the dev server's own UI
// (`whale dev`: devServer.ip and devServer.uiPort) or Temporal Cloud's; unknown for other clusters.
import type { TemporalConfig } from '../temporal.config';

/** The Web UI's base URL for the server `config.address` names, or null when it cannot be known. */
export function webUiBase(config: Pick<TemporalConfig, 'address' | 'devServer'>): string | null {
  const [host, port] = splitAddress(config.address);
  if (/\.tmprl\.cloud$|\.api\.temporal\.io$/.test(host)) return 'https://cloud.temporal.io';
  const local = (h: string) => h === 'localhost' || h === '127.0.0.1' || h === '::1' || h === '0.0.0.0';
  const dev = config.devServer;
  if (port === String(dev.port) && (host === dev.ip || (local(host) && local(dev.ip)))) {
    // A dev server bound to every interface is browsed at the loopback address.
    return `http://${dev.ip === '0.0.0.0' ? '127.0.0.1' : dev.ip}:${dev.uiPort}`;
  }
  return null;
}

/** The run's page: `<base>/namespaces/<ns>/workflows/<workflow id>` (the UI shows the chain's latest run). */
export function webUiRunUrl(config: Pick<TemporalConfig, 'address' | 'devServer' | 'namespace'>, workflowId: string): string | null {
  const base = webUiBase(config);
  return base ? `${base}/namespaces/${encodeURIComponent(config.namespace)}/workflows/${encodeURIComponent(workflowId)}` : null;
}

function splitAddress(address: string): [string, string] {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address.trim());
  return m ? [m[1].toLowerCase(), m[2]] : [address.trim().toLowerCase(), '7233'];
}
