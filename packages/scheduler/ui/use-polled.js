import { useEffect, useState } from 'preact/hooks';

/** What `load()` answers, read now and again every `everyMs`; the last error beside it. */
export function usePolled(load, everyMs) {
  const [data, setData] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    let stop = false;
    const read = () =>
      load().then(
        (d) => {
          if (stop) return;
          setData(d);
          setError('');
        },
        (e) => {
          if (!stop) setError(e.message);
        },
      );
    void read();
    const timer = setInterval(read, everyMs);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  return { data, error };
}
