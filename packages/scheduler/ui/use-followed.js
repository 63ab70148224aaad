import { useEffect, useState } from 'preact/hooks';

/**
 * A record kept live: `load(id)` reads it, `follow(id, onEvent, signal)` streams its events, and an event
 * whose type is in `refreshOn` reads it again. Returns the record, the events so far, the last error,
 * and `reload`.
 */
export function useFollowed(id, load, follow, refreshOn) {
  const [record, setRecord] = useState(undefined);
  const [events, setEvents] = useState([]);
  const [error, setError] = useState('');

  const reload = () => load(id).then(setRecord, (e) => setError(e.message));
  useEffect(() => {
    setEvents([]);
    setRecord(undefined);
    setError('');
    void reload();
    const stop = new AbortController();
    follow(
      id,
      (e) => {
        setEvents((list) => [...list, e]);
        if (refreshOn.has(e.type)) void reload();
      },
      stop.signal,
    ).catch((e) => {
      if (!stop.signal.aborted) setError(e.message);
    });
    return () => stop.abort();
  }, [id]);
  return { record, events, error, setError, reload };
}
