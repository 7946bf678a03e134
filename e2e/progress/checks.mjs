// The three progress checks every surface must pass (issue 5, "Long calls survive the clients
// that call them"), with the official TypeScript SDK client and its own timeout logic:
//
//   progress-keeps-call-alive  a call that runs ~30 s, made with a 12 s timeout,
//                              `resetTimeoutOnProgress: true` and `onprogress`, completes with
//                              its normal result; progress arrived (>= 2, enough to bridge 30 s
//                              with a 12 s timeout), with strictly increasing values.
//   no-token-no-progress       the same call without `onprogress` (so without a progress token)
//                              completes, and its session received no `notifications/progress`
//                              at all.
//   no-reset-times-out         the same call with `onprogress` but `resetTimeoutOnProgress:
//                              false` fails with the SDK's RequestTimeout after 12 s although
//                              progress arrived: the progress, not a slow clock, is what keeps
//                              the first call alive.
//
// The three calls run concurrently on three separate sessions (so a stray notification is
// attributed to the right call), which keeps the whole run near the length of one call.
// Each check prints `PASS <name>` or `FAIL <name>: <why>`.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The client timeout of the checks: well under the call, longer than two heartbeats. */
export const CLIENT_TIMEOUT_MS = 12_000;
/** The SDK's ErrorCode.RequestTimeout. */
const REQUEST_TIMEOUT_CODE = -32001;

export class CheckFailed extends Error {}
export function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

export function requireEnv(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run this driver through e2e/progress/run.sh`);
  return value;
}

/**
 * Counts, per session, every JSON-RPC message the transport delivered to the client (what came
 * off the wire, before the SDK routes it), by wrapping `transport.onmessage` after connect.
 */
export function countIncoming(transport) {
  // progressWithAnswer: progress that came in the same read as the answer, just before it. The
  // TypeScript SDK handles notifications in a microtask but answers synchronously, so it has
  // already dropped the call's progress handler when such a progress is handled ("unknown
  // token"): the wire order is right, the SDK cannot deliver it. progressAfterAnswer: a server
  // defect (nothing may follow the answer).
  const seen = { progress: 0, messages: 0, progressWithAnswer: 0, progressAfterAnswer: 0 };
  const deliver = transport.onmessage;
  // Messages parsed from one read are handed over in one synchronous loop: one batch number.
  let batch = 0;
  let batchOpen = false;
  let answerBatch = null;
  let progressInBatch = 0;
  transport.onmessage = (message, extra) => {
    if (!batchOpen) {
      batch += 1;
      batchOpen = true;
      progressInBatch = 0;
      queueMicrotask(() => {
        batchOpen = false;
      });
    }
    seen.messages += 1;
    if (message?.method === 'notifications/progress') {
      seen.progress += 1;
      progressInBatch += 1;
      if (answerBatch !== null) seen.progressAfterAnswer += 1;
    } else if (message?.id !== undefined && (message.error || message.result?.content) && answerBatch === null) {
      // The tool call's answer (a session makes one call; initialize's answer has no content).
      answerBatch = batch;
      seen.progressWithAnswer = progressInBatch;
    }
    deliver?.(message, extra);
  };
  return seen;
}

/**
 * A clean environment for one stdio bridge process: a private HOME, state dir and XDG dirs
 * under `homes` (shaped like e2e/gateway/harness.py's), so nothing reads or writes the
 * user's ~/.openclaw. Returns the env; `env.HOME` is the private home.
 */
export function privateOpenClawEnv(homes, prefix) {
  mkdirSync(homes, { recursive: true, mode: 0o700 });
  const home = mkdtempSync(join(homes, prefix));
  const state = join(home, 'state');
  for (const dir of [state, join(home, '.config'), join(home, '.local/share'), join(home, '.local/state'), join(home, '.cache')]) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  const config = join(state, 'openclaw.json');
  writeFileSync(config, `${JSON.stringify({ logging: { file: join(home, 'openclaw.log') } })}\n`, { mode: 0o600 });
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: home,
    OPENCLAW_HOME: home,
    OPENCLAW_STATE_DIR: state,
    OPENCLAW_CONFIG_PATH: config,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local/share'),
    XDG_STATE_HOME: join(home, '.local/state'),
    XDG_CACHE_HOME: join(home, '.cache'),
  };
}

function progressCollector() {
  const events = [];
  return { events, onprogress: (progress) => events.push(progress) };
}

function checkIncreasing(events) {
  for (let i = 1; i < events.length; i += 1) {
    expect(
      events[i].progress > events[i - 1].progress,
      `progress must increase: ${JSON.stringify(events.map((e) => e.progress))}`,
    );
  }
  for (const event of events) {
    expect(typeof event.message === 'string' && event.message, `progress without a message: ${JSON.stringify(event)}`);
  }
}

/**
 * Runs the three checks.
 *   label        surface name for the output, e.g. `node-http system.run`
 *   openSession  async () => ({ client, seen, close, describeCall?(kind) }) a fresh connected
 *                client; `seen` from countIncoming; describeCall(kind) may return extra facts
 *                about how the call's answer travelled (checked by `afterCall`)
 *   request      the callTool params ({ name, arguments })
 *   checkResult  (result) => void, throws CheckFailed if the tool result is not the normal one
 *   afterCall    optional async (kind, session) => void for transport-specific assertions,
 *                kind being 'with-token' or 'without-token'
 */
export async function runProgressChecks({ label, openSession, request, checkResult, afterCall }) {
  const results = [];
  const check = async (name, body) => {
    try {
      await body();
      results.push({ name, ok: true });
      console.log(`PASS ${name} (${label})`);
    } catch (error) {
      results.push({ name, ok: false });
      console.log(`FAIL ${name} (${label}): ${error instanceof CheckFailed ? error.message : error?.stack ?? error}`);
    }
  };
  const withSession = async (body) => {
    const session = await openSession();
    try {
      await body(session);
    } finally {
      await session.close();
    }
  };

  await Promise.all([
    check('progress-keeps-call-alive', () =>
      withSession(async (session) => {
        const { events, onprogress } = progressCollector();
        const result = await session.client.callTool(request, undefined, {
          timeout: CLIENT_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          onprogress,
        });
        checkResult(result);
        expect(events.length >= 2, `expected at least 2 progress notifications, got ${JSON.stringify(events)}`);
        checkIncreasing(events);
        const { progress, progressWithAnswer, progressAfterAnswer } = session.seen;
        expect(progressAfterAnswer === 0, `${progressAfterAnswer} progress notifications arrived after the answer`);
        expect(progress - progressWithAnswer === events.length,
          `wire carried ${progress} progress (${progressWithAnswer} in the answer's read, which the SDK drops), SDK delivered ${events.length}`);
        await afterCall?.('with-token', session);
      }),
    ),
    check('no-token-no-progress', () =>
      withSession(async (session) => {
        // No onprogress: the SDK sends no progressToken. The timeout only guards the run.
        const result = await session.client.callTool(request, undefined, { timeout: 5 * CLIENT_TIMEOUT_MS + 30_000 });
        checkResult(result);
        expect(session.seen.progress === 0, `${session.seen.progress} progress notifications arrived without a token`);
        await afterCall?.('without-token', session);
      }),
    ),
    check('no-reset-times-out', () =>
      withSession(async (session) => {
        const { events, onprogress } = progressCollector();
        let outcome;
        try {
          outcome = { result: await session.client.callTool(request, undefined, { timeout: CLIENT_TIMEOUT_MS, onprogress }) };
        } catch (error) {
          outcome = { error };
        }
        expect(outcome.error, `the call should time out without resetTimeoutOnProgress, got ${JSON.stringify(outcome.result)}`);
        expect(outcome.error.code === REQUEST_TIMEOUT_CODE, `expected RequestTimeout (-32001), got ${outcome.error}`);
        expect(events.length >= 1, 'progress should still have arrived before the timeout');
        checkIncreasing(events);
      }),
    ),
  ]);
  return results;
}
