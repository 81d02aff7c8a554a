/**
 * Tracing wraps the stages instead of being written into them: a stage that names a span is run,
 * when the request's trace records, inside a child span of that name, ended when its run is done
 * (at once, or when its promise settles), failed with the error's status when it throws.
 */
import type { SpanHandle } from '../observability/tracing/tracing.js';
import type { ChainRequest } from './request.js';
import { ANSWERED, type Stage, type StageSpan, type Step } from './stage.js';

type Run = (request: ChainRequest) => Step;

/** The stage's run, recorded: used in place of `run` for requests whose trace records. */
export function tracedRun(stage: Stage & { run: Run; span: StageSpan }): Run {
  const { run, span: declared } = stage;
  const failed = (span: SpanHandle, error: unknown): never => {
    span.fail(String((error as { status?: number }).status ?? 'error'), (error as Error).message);
    span.end();
    throw error;
  };
  return (request) => {
    const span = request.trace!.child(declared.name, 'internal');
    let step: Step;
    try {
      step = run.call(stage, request);
    } catch (error) {
      return failed(span, error);
    }
    if (step === undefined || step === ANSWERED) {
      declared.describe?.(request, span, false);
      span.end();
      return step;
    }
    return step.then(
      (done) => {
        declared.describe?.(request, span, true);
        span.end();
        return done;
      },
      (error: unknown) => failed(span, error),
    );
  };
}
