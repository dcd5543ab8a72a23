/**
 * Forms of the app's pages: a form that never navigates (`Form`), a labelled control (`Field`, and `TextField`,
 * `TextArea`, `SelectField` for the common controls: the label tied to the control by id, a hint tied by
 * aria-describedby), the submit row with its error (`FormActions`) and a search box (`SearchForm`). The API's
 * refusals are about a whole request (`{error: {message}}`, no field named), so they show under the form, in the
 * API's words, rather than under a field; a field's own rules are the browser's (`required`, `pattern`, `maxLength`).
 */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { ErrorNote } from './ui.tsx';

/**
 * A form whose submission runs `onSubmit` instead of loading a page. With `title`, a card headed by it (an h2 the
 * form is named by); `inline` lays its label, control and buttons out in one wrapping row.
 */
export function Form(props: {
  onSubmit(): unknown;
  title?: string;
  /** A card (the default with a title). */
  card?: boolean;
  inline?: boolean;
  role?: 'search';
  /** The form's name when it has no title. */
  label?: string;
  children: ComponentChildren;
}) {
  const titleId = useId();
  const classes = [(props.card ?? Boolean(props.title)) && 'card', props.inline && 'inline-form'].filter(Boolean);
  return (
    <form
      class={classes.join(' ') || undefined}
      role={props.role}
      aria-labelledby={props.title ? titleId : undefined}
      aria-label={props.title ? undefined : props.label}
      onSubmit={(event) => {
        event.preventDefault();
        void props.onSubmit();
      }}
    >
      {props.title ? <h2 id={titleId}>{props.title}</h2> : null}
      {props.children}
    </form>
  );
}

/** What a control needs to be tied to its label and hint: spread it on the control. */
export interface ControlWiring {
  id: string;
  'aria-describedby'?: string;
}

export interface FieldProps {
  /** The control's id (the label's `for`); a generated one when left out. */
  id?: string;
  label: ComponentChildren;
  /** A line under the control that describes it (the control's aria-describedby). */
  hint?: ComponentChildren;
  /** More ids that describe the control (a live preview of what it will do, say). */
  describedBy?: string;
  /** Label and control as items of the row around them (an inline form), not a column of their own. */
  inline?: boolean;
  /** The label for screen readers only, where what surrounds the control already says what it is for. */
  hideLabel?: boolean;
}

/**
 * A label and the control `children` draws with the wiring it is given (its id, its description), and the hint:
 * for controls the three below do not cover (a file input, a range …).
 */
export function Field(props: FieldProps & { children(control: ControlWiring): ComponentChildren }) {
  const generated = useId();
  const id = props.id ?? generated;
  const hintId = props.hint ? `${id}-hint` : undefined;
  const describedBy = [hintId, props.describedBy].filter(Boolean).join(' ') || undefined;
  const parts = (
    <>
      <label for={id} class={props.hideLabel ? 'visually-hidden' : undefined}>
        {props.label}
      </label>
      {props.children({ id, 'aria-describedby': describedBy })}
      {props.hint ? (
        <small id={hintId} class="muted">
          {props.hint}
        </small>
      ) : null}
    </>
  );
  return props.inline ? parts : <div class="field">{parts}</div>;
}

/** The attributes of a text input a page may set besides its value (the rest is the field's). */
interface InputOptions {
  name?: string;
  type?: 'text' | 'email' | 'search' | 'url' | 'range' | 'number';
  required?: boolean;
  maxLength?: number;
  pattern?: string;
  placeholder?: string;
  autocomplete?: string;
  inputMode?: 'numeric' | 'text' | 'email';
  min?: number;
  max?: number;
  step?: number;
}

/** A labelled input; `onValue` gets its text as typed. */
export function TextField(props: FieldProps & InputOptions & { value: string | number; onValue(value: string): void }) {
  const { id, label, hint, describedBy, inline, hideLabel, value, onValue, type, ...input } = props;
  return (
    <Field id={id} label={label} hint={hint} describedBy={describedBy} inline={inline} hideLabel={hideLabel}>
      {(wiring) => (
        <input
          {...wiring}
          {...input}
          // Preact's types pair each input type with the ARIA roles it allows; these set no role.
          type={type as 'text' | undefined}
          value={value}
          onInput={(e) => onValue((e.target as HTMLInputElement).value)}
        />
      )}
    </Field>
  );
}

/** A labelled text area; `onValue` gets its text as typed. */
export function TextArea(
  props: FieldProps & {
    value: string;
    onValue(value: string): void;
    rows?: number;
    required?: boolean;
    maxLength?: number;
  },
) {
  const { id, label, hint, describedBy, inline, hideLabel, value, onValue, ...textarea } = props;
  return (
    <Field id={id} label={label} hint={hint} describedBy={describedBy} inline={inline} hideLabel={hideLabel}>
      {(wiring) => (
        <textarea
          {...wiring}
          {...textarea}
          value={value}
          onInput={(e) => onValue((e.target as HTMLTextAreaElement).value)}
        />
      )}
    </Field>
  );
}

/** A choice: a value shown as itself, or a value and the words shown for it. */
export type Choice = string | { value: string; label: string };

/** A labelled select of `options`; `onValue` gets the chosen value. */
export function SelectField(
  props: FieldProps & { value: string | number; options: readonly Choice[]; onValue(value: string): void },
) {
  const { value, options, onValue, ...field } = props;
  return (
    <Field {...field}>
      {(wiring) => (
        <select {...wiring} value={value} onChange={(e) => onValue((e.target as HTMLSelectElement).value)}>
          {options.map((option) => {
            const [optionValue, text] = typeof option === 'string' ? [option, option] : [option.value, option.label];
            return (
              <option key={optionValue} value={optionValue}>
                {text}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

/**
 * A form's buttons: the submit button (disabled while `action` runs, or when `disabled`), Cancel when the form can
 * be closed, and the action's failure in the API's words under them.
 */
export function FormActions(props: {
  submit: ComponentChildren;
  action: { busy: boolean; error: unknown };
  disabled?: boolean;
  onCancel?(): void;
  /** Words before the API's message ("Upload failed: …"). */
  errorPrefix?: string;
  /** The buttons inside the row around them (an inline form) rather than a row of their own. */
  inline?: boolean;
  secondary?: boolean;
}) {
  const buttons = (
    <>
      <button
        type="submit"
        class={props.secondary ? 'secondary' : undefined}
        disabled={props.action.busy || props.disabled}
      >
        {props.submit}
      </button>
      {props.onCancel ? (
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      ) : null}
    </>
  );
  return (
    <>
      {props.inline ? buttons : <div class="button-row">{buttons}</div>}
      <ErrorNote error={props.action.error} prefix={props.errorPrefix} />
    </>
  );
}

/**
 * A search box with its button, a `search` landmark: `onSearch` gets the query, trimmed. The label may be for
 * screen readers only where a heading above already says what is searched.
 */
export function SearchForm(props: {
  id: string;
  label: string;
  hideLabel?: boolean;
  value: string;
  onValue(value: string): void;
  onSearch(query: string): unknown;
  required?: boolean;
  busy?: boolean;
  children?: ComponentChildren;
}) {
  return (
    <Form role="search" inline onSubmit={() => props.onSearch(props.value.trim())}>
      <TextField
        id={props.id}
        type="search"
        label={props.label}
        hideLabel={props.hideLabel}
        inline
        required={props.required}
        value={props.value}
        onValue={props.onValue}
      />
      <button type="submit" class="secondary" disabled={props.busy}>
        Search
      </button>
      {props.children}
    </Form>
  );
}
