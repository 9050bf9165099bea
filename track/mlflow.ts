// The MLflow implementation of the tracker interface, over the tracking server's REST API (fetch only, no
// Python): one MLflow run per WHALE run, found again by its workflow-id tag; artifacts through the server's
// artifact proxy (`mlflow server --serve-artifacts`, the default of a plain `mlflow server`).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { ExportResult, MetricPoint, RunExporter, TrackedRun, TrackedStatus } from './exporter';
import { WhaleError } from '../common/errors';

const RUN_TAG = 'whale.workflow_id';
const STATUS: Record<TrackedStatus, string> = { running: 'RUNNING', finished: 'FINISHED', failed: 'FAILED', killed: 'KILLED' };
// The REST API's limits per log-batch call: 1000 metrics, 100 params, 100 tags.
const BATCH = { metrics: 1000, params: 100, tags: 100 };
// MLflow's limits on a param value and a tag value (characters).
const MAX_PARAM = 6000;
const MAX_TAG = 8000;

/** A wrong --mlflow-uri, an MLflow run this exporter did not write, or a server that refused a call: the message says which. */
export class MlflowError extends WhaleError {
  override name = 'MlflowError';
  readonly fault = 'user-input';
}

export class MlflowExporter implements RunExporter {
  readonly describe: string;
  private readonly base: string;

  constructor(trackingUri: string, private readonly experiment = 'whale') {
    let url: URL;
    try {
      url = new URL(trackingUri);
    } catch {
      throw new MlflowError(`--mlflow-uri must be the tracking server's http(s) URL, e.g. http://127.0.0.1:5000; got '${trackingUri}'`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new MlflowError(`--mlflow-uri must be an http(s) URL of a tracking server (\`mlflow server\`); got '${trackingUri}'`);
    this.base = url.toString().replace(/\/+$/, '');
    this.describe = `MLflow at ${this.base} (experiment '${experiment}')`;
  }

  private async call<T>(method: 'GET' | 'POST', api: string, body?: Record<string, unknown>, okStatuses: number[] = []): Promise<{ status: number; json: T }> {
    const url = method === 'GET' && body ? `${this.base}${api}?${new URLSearchParams(body as Record<string, string>)}` : `${this.base}${api}`;
    let res: Response | null = null;
    for (let attempt = 1; !res; attempt++) {
      try {
        res = await fetch(url, { method, headers: method === 'POST' ? { 'content-type': 'application/json' } : undefined, body: method === 'POST' ? JSON.stringify(body ?? {}) : undefined });
      } catch (err) {
        const cause = (err as Error).cause as (Error & { code?: string }) | undefined;
        // The server (uvicorn) closes idle keep-alive connections; a request sent on one as it closes never
        // reached it, so sending it again on a fresh connection cannot log a point twice.
        if (cause?.code === 'UND_ERR_SOCKET' && attempt < 3) continue;
        throw new MlflowError(`cannot reach the MLflow tracking server at ${this.base} (${cause?.message ?? (err as Error).message}); start one with \`mlflow server\` or fix --mlflow-uri`);
      }
    }
    const text = await res.text();
    if (!res.ok && !okStatuses.includes(res.status)) throw new MlflowError(`MLflow ${method} ${api} answered ${res.status}: ${text.slice(0, 500)}`);
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as T };
  }

  async experimentId(): Promise<string> {
    const got = await this.call<{ experiment?: { experiment_id: string } }>('GET', '/api/2.0/mlflow/experiments/get-by-name', { experiment_name: this.experiment }, [404]);
    if (got.json.experiment) return got.json.experiment.experiment_id;
    const made = await this.call<{ experiment_id: string }>('POST', '/api/2.0/mlflow/experiments/create', { name: this.experiment });
    return made.json.experiment_id;
  }

  /** The MLflow run holding this workflow id's metrics, or null. */
  async findRun(experimentId: string, workflowId: string): Promise<{ run_id: string; artifact_uri: string } | null> {
    const filter = `tags.\`${RUN_TAG}\` = '${workflowId.replace(/'/g, "\\'")}'`;
    const r = await this.call<{ runs?: { info: { run_id: string; artifact_uri: string } }[] }>('POST', '/api/2.0/mlflow/runs/search', { experiment_ids: [experimentId], filter, max_results: 2 });
    const runs = r.json.runs ?? [];
    if (runs.length > 1) throw new MlflowError(`experiment '${this.experiment}' holds more than one MLflow run tagged ${RUN_TAG}=${workflowId}; delete the extra one in the MLflow UI`);
    return runs[0]?.info ?? null;
  }

  /** Every point of one metric series, in the order logged. */
  async metricHistory(runId: string, key: string): Promise<{ key: string; value: number; step: number; timestamp: number }[]> {
    const out: { key: string; value: number; step: number; timestamp: number }[] = [];
    let pageToken: string | undefined;
    do {
      const r = await this.call<{ metrics?: { key: string; value: number; step?: string | number; timestamp: string | number }[]; next_page_token?: string }>(
        'GET', '/api/2.0/mlflow/metrics/get-history', { run_id: runId, metric_key: key, max_results: '25000', ...(pageToken ? { page_token: pageToken } : {}) });
      for (const m of r.json.metrics ?? []) out.push({ key: m.key, value: m.value, step: Number(m.step ?? 0), timestamp: Number(m.timestamp) });
      pageToken = r.json.next_page_token || undefined;
    } while (pageToken);
    return out;
  }

  runUrl(experimentId: string, runId: string): string {
    return `${this.base}/#/experiments/${experimentId}/runs/${runId}`;
  }

  async exportRun(run: TrackedRun, artifactDir: string | null): Promise<ExportResult> {
    const experimentId = await this.experimentId();
    let info = await this.findRun(experimentId, run.workflowId);
    const created = info === null;
    if (!info) {
      const r = await this.call<{ run: { info: { run_id: string; artifact_uri: string } } }>('POST', '/api/2.0/mlflow/runs/create', {
        experiment_id: experimentId, run_name: run.name, start_time: run.startTime || Date.now(), tags: [{ key: RUN_TAG, value: run.workflowId }],
      });
      info = r.json.run.info;
    }
    const runId = info.run_id;
    // Only the points not logged yet: a later export can add points anywhere in a series (an evaluation that
    // reused a score is listed once the workflow records it), so points are matched by (step, value).
    const byKey = new Map<string, MetricPoint[]>();
    for (const m of run.metrics) byKey.set(m.key, [...(byKey.get(m.key) ?? []), m]);
    const fresh: MetricPoint[] = [];
    let already = 0;
    for (const [key, points] of byKey) {
      const held = created ? [] : await this.metricHistory(runId, key);
      const d = unloggedPoints(points, held, `MLflow run ${runId}`);
      already += d.already;
      fresh.push(...d.fresh);
    }
    const params = Object.entries(run.params).map(([key, value]) => ({ key: key.slice(0, 250), value: value.slice(0, MAX_PARAM) }));
    const tags = Object.entries(run.tags).map(([key, value]) => ({ key, value: value.slice(0, MAX_TAG) }));
    // Params are write-once in MLflow (the same value again is accepted): only on the first export.
    for (let i = 0; created && i < params.length; i += BATCH.params) await this.call('POST', '/api/2.0/mlflow/runs/log-batch', { run_id: runId, params: params.slice(i, i + BATCH.params) });
    for (let i = 0; i < tags.length; i += BATCH.tags) await this.call('POST', '/api/2.0/mlflow/runs/log-batch', { run_id: runId, tags: tags.slice(i, i + BATCH.tags) });
    for (let i = 0; i < fresh.length; i += BATCH.metrics) {
      await this.call('POST', '/api/2.0/mlflow/runs/log-batch', { run_id: runId, metrics: fresh.slice(i, i + BATCH.metrics) });
    }
    const artifactsUploaded = artifactDir ? await this.uploadDir(info.artifact_uri, artifactDir) : 0;
    await this.call('POST', '/api/2.0/mlflow/runs/update', { run_id: runId, status: STATUS[run.status], ...(run.endTime ? { end_time: run.endTime } : {}) });
    return { trackerRunId: runId, url: this.runUrl(experimentId, runId), created, metricsLogged: fresh.length, metricsAlreadyThere: already, artifactsUploaded };
  }

  /** Uploads every file under `dir` to the run's artifact folder `audit/` through the server's proxy. */
  private async uploadDir(artifactUri: string, dir: string): Promise<number> {
    // A proxied run's artifact URI is mlflow-artifacts:/<experiment>/<run>/artifacts (or with a host).
    const m = /^mlflow-artifacts:(?:\/\/[^/]*)?\/(.+)$/.exec(artifactUri);
    if (!m) throw new MlflowError(`the MLflow run stores artifacts at '${artifactUri}', which this exporter cannot reach over HTTP; start the server with --serve-artifacts (the default) and a new experiment, or use --no-artifacts`);
    let n = 0;
    const walk = (rel: string): string[] => readdirSync(path.join(dir, rel)).flatMap((f) => {
      const r = rel ? `${rel}/${f}` : f;
      return statSync(path.join(dir, r)).isDirectory() ? walk(r) : [r];
    });
    for (const rel of walk('')) {
      const target = `${this.base}/api/2.0/mlflow-artifacts/artifacts/${m[1].split('/').map(encodeURIComponent).join('/')}/audit/${rel.split('/').map(encodeURIComponent).join('/')}`;
      const put = () => fetch(target, { method: 'PUT', body: readFileSync(path.join(dir, rel)) });
      // A PUT replaces the file: sending it again after a closed keep-alive connection is harmless.
      const res = await put().catch((err: Error) => ((err.cause as { code?: string } | undefined)?.code === 'UND_ERR_SOCKET' ? put() : Promise.reject(err)));
      if (!res.ok) throw new MlflowError(`uploading ${rel} to MLflow answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
      n++;
    }
    return n;
  }
}

/**
 * The points of one series that a tracker run does not hold yet, matched by (step, value) as a multiset.
 * A held point the series lacks means the tracker run was written by something else: an error saying so.
 */
export function unloggedPoints(points: MetricPoint[], held: { key: string; step: number; value: number }[], where: string): { fresh: MetricPoint[]; already: number } {
  const id = (p: { step: number; value: number }) => `${p.step}\u0000${p.value}`;
  const have = new Map<string, number>();
  for (const h of held) have.set(id(h), (have.get(id(h)) ?? 0) + 1);
  const fresh: MetricPoint[] = [];
  let already = 0;
  for (const p of points) {
    const n = have.get(id(p)) ?? 0;
    if (n > 0) {
      have.set(id(p), n - 1);
      already++;
    } else fresh.push(p);
  }
  for (const h of held) {
    if ((have.get(id(h)) ?? 0) > 0) {
      throw new MlflowError(`${where} holds ${h.key} = ${h.value} at step ${h.step}, which the run's history does not have: it was not written by this export; delete the run in MLflow and export again`);
    }
  }
  return { fresh, already };
}
