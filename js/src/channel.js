// The widget's requests to Python: one request/response channel over anywidget's custom messages
// (modelled on lonboard's dispatch.ts). Python partner: kernelscope/view/widget.py (`answer`,
// `HANDLERS`; the message shapes are its `Request` and `Reply`). Every request carries a unique
// `id` and its `kind`, and Python's one reply echoes both, so replies to requests in flight together
// never cross, nor do those to another view of the same widget (every view hears every reply).
// A request rejects with a ChannelError when the reply has `error` (why Python could not answer),
// when no reply comes within its time-out, or when the channel closes (its view went away).

let channels = 0;

/** Why a request failed: `reason` is "error" (Python's reply says why), "timeout" or "closed". */
export class ChannelError extends Error {
  constructor(message, { kind, id, reason, reply = null }) {
    super(message);
    this.name = "ChannelError";
    Object.assign(this, { kind, id, reason, reply });
  }
}

const seconds = (ms) => (ms >= 1000 ? `${+(ms / 1000).toFixed(1)} s` : `${ms} ms`);

/**
 * A channel on `model` (anywidget's: on/off("msg:custom", fn), send(msg)).
 * request(kind, body, { timeoutMs }) -> Promise<{ msg, buffers }>: sends { ...body, id, kind };
 * close() stops listening and rejects every request still waiting.
 */
export function makeChannel(model, { timeoutMs = 30_000 } = {}) {
  // A prefix of its own: the views of one widget on other pages send their own ids.
  const prefix = `${Math.random().toString(36).slice(2, 10)}-${++channels}`;
  const waiting = new Map();
  let asked = 0;
  let closed = false;
  const take = (id) => {
    const w = waiting.get(id);
    if (w) {
      waiting.delete(id);
      clearTimeout(w.timer);
    }
    return w;
  };
  const onMsg = (msg, buffers) => {
    const w = msg && typeof msg === "object" ? take(msg.id) : null;
    if (!w) return; // another view's reply, or a late one to a request that timed out
    if (msg.error != null)
      w.reject(new ChannelError(String(msg.error), { kind: w.kind, id: msg.id, reason: "error", reply: msg }));
    else w.resolve({ msg, buffers: buffers || [] });
  };
  model.on("msg:custom", onMsg);

  function request(kind, body = {}, opts = {}) {
    const id = `${prefix}-${++asked}`;
    if (closed)
      return Promise.reject(
        new ChannelError(`the "${kind}" request was not sent: the view is closed`, { kind, id, reason: "closed" })
      );
    const ms = opts.timeoutMs ?? timeoutMs;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        take(id);
        reject(
          new ChannelError(
            `no reply from the Python kernel to the "${kind}" request (${id}) within ${seconds(ms)}: `
              + "the kernel is busy or has gone",
            { kind, id, reason: "timeout" }
          )
        );
      }, ms);
      waiting.set(id, { resolve, reject, timer, kind });
      try {
        model.send({ ...body, id, kind });
      } catch (err) {
        take(id);
        reject(err);
      }
    });
  }

  function close() {
    if (closed) return;
    closed = true;
    model.off("msg:custom", onMsg);
    for (const [id, w] of [...waiting]) {
      take(id);
      w.reject(
        new ChannelError(`the "${w.kind}" request (${id}) was dropped: the view is closed`, {
          kind: w.kind,
          id,
          reason: "closed",
        })
      );
    }
  }

  return { request, close, waiting: () => waiting.size };
}
