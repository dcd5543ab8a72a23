/**
 * A button for what cannot be undone (delete, revoke): pressed, it asks first, in place. Focus lands on the
 * confirming button; Escape or Cancel goes back, with focus on the button again. The same step the operator
 * console's key revocation takes.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export function ConfirmButton(props: {
  /** The button's accessible name, saying what goes ("Revoke key browser key", "Delete hello-web"). */
  label: string;
  /** Its visible words when shorter than `label` (which must contain them): "Delete" in a list of many. */
  children?: ComponentChildren;
  /** What confirming does, in a sentence ("The page goes offline at once."). */
  warning: string;
  /** The confirming button's words ("Yes, delete hello-web"). */
  confirm: string;
  onConfirm(): unknown;
  disabled?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const trigger = useRef<HTMLButtonElement>(null);
  const yes = useRef<HTMLButtonElement>(null);
  const focusTrigger = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (focusTrigger.current) trigger.current?.focus();
    focusTrigger.current = false;
  }, [asking]);
  const back = () => {
    focusTrigger.current = true;
    setAsking(false);
  };

  if (!asking) {
    return (
      <button
        ref={trigger}
        type="button"
        class="danger"
        aria-label={props.children === undefined ? undefined : props.label}
        disabled={props.disabled}
        onClick={() => setAsking(true)}
      >
        {props.children ?? props.label}
      </button>
    );
  }
  return (
    <div
      class="confirm"
      role="group"
      aria-label={`Confirm: ${props.label}`}
      onKeyDown={(event) => {
        if (event.key === 'Escape') back();
      }}
    >
      <span>{props.warning}</span>
      <button
        ref={yes}
        type="button"
        class="danger"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await props.onConfirm();
          } finally {
            // Still here (the thing stayed, or its removal failed and the page says why): the button again.
            setBusy(false);
            back();
          }
        }}
      >
        {props.confirm}
      </button>
      <button type="button" class="secondary" onClick={back}>
        Cancel
      </button>
    </div>
  );
}
