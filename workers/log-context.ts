// Attaches the run's log context (run id, phase, cycle, step; sent by the workflow in every activity input)
// to every log line an activity writes, and logs each activity's start and end with its duration.
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { LogContext } from '../activities/types';

function contextOf(args: unknown[]): LogContext | undefined {
  const first = args[0] as { logContext?: LogContext } | undefined;
  return first && typeof first === 'object' ? first.logContext : undefined;
}

export const logContextInterceptor: ActivityInterceptorsFactory = (ctx) => {
  let context: LogContext | undefined;
  return {
    inbound: {
      async execute(input, next) {
        context = contextOf(input.args);
        const started = Date.now();
        ctx.log.info('activity started', { attempt: ctx.info.attempt });
        try {
          const result = await next(input);
          ctx.log.info('activity completed', { durationMs: Date.now() - started });
          return result;
        } catch (err) {
          ctx.log.warn('activity failed', { durationMs: Date.now() - started, error: (err as Error).message });
          throw err;
        }
      },
    },
    outbound: {
      getLogAttributes(input, next) {
        return next({ ...input, ...(context ?? {}) });
      },
    },
  };
};
