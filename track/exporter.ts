// The experiment-tracker interface `whale track` exports through, and the tracker-neutral shape of one
// WHALE run (parameters, tags, metric series). MLflow implements it (mlflow.ts); TensorBoard or W&B can follow.

/** One point of a metric series; `step` is the weight step or the rollouts spent, as the key's series says. */
export interface MetricPoint {
  key: string;
  value: number;
  step: number;
  /** Milliseconds since the epoch: when the history recorded it (the activity's completion). */
  timestamp: number;
}

export type TrackedStatus = 'running' | 'finished' | 'failed' | 'killed';

/** A WHALE run as a tracker sees it, derived from its workflow history and description only. */
export interface TrackedRun {
  workflowId: string;
  /** The display name in the tracker. */
  name: string;
  status: TrackedStatus;
  startTime: number;
  endTime: number | null;
  /** The expanded run config, flattened to dotted keys. */
  params: Record<string, string>;
  /** Searchable labels (method, domain, current phase); updated on every export. */
  tags: Record<string, string>;
  /**
   * Every metric series in history order. A series only grows as the history grows, so an exporter can log
   * just the points past the ones it already holds (re-exporting adds nothing).
   */
  metrics: MetricPoint[];
}

export interface ExportResult {
  /** The tracker's id of the run and a page a person can open (null when the tracker has none). */
  trackerRunId: string;
  url: string | null;
  created: boolean;
  metricsLogged: number;
  metricsAlreadyThere: number;
  artifactsUploaded: number;
}

export interface RunExporter {
  /** For messages: "MLflow at http://...". */
  readonly describe: string;
  /**
   * Finds the tracker run of `run.workflowId` (by a tag, so a second export never makes a second run) or
   * creates it, logs the params, tags and the metric points it does not hold yet, uploads the files of
   * `artifactDir` (if given) and sets the run's status.
   */
  exportRun(run: TrackedRun, artifactDir: string | null): Promise<ExportResult>;
}
