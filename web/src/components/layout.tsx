/**
 * The frame of a page (`Page`: its h1, the buttons beside it, a line saying what the page is for) and of a part of
 * one (`Section`: a card named by its h2, with a control beside the heading when it has one).
 */
import type { ComponentChildren } from 'preact';
import { useId } from 'preact/hooks';
import { PageHeader } from './ui.tsx';

export function Page(props: {
  title: string;
  /** Buttons beside the title ("New custom agent", "Refresh"). */
  actions?: ComponentChildren;
  intro?: ComponentChildren;
  class?: string;
  children: ComponentChildren;
}) {
  return (
    <section class={props.class ? `page ${props.class}` : 'page'} aria-labelledby="page-title">
      <PageHeader title={props.title}>{props.actions}</PageHeader>
      {props.intro ? <p class="muted">{props.intro}</p> : null}
      {props.children}
    </section>
  );
}

export function Section(props: {
  title: string;
  /** Beside the heading: a control that changes what the section shows (a period …). */
  aside?: ComponentChildren;
  /** A plain part of the page rather than a card. */
  plain?: boolean;
  children: ComponentChildren;
}) {
  const titleId = useId();
  const heading = <h2 id={titleId}>{props.title}</h2>;
  return (
    <section class={props.plain ? undefined : 'card'} aria-labelledby={titleId}>
      {props.aside ? (
        <div class="item-head">
          {heading}
          {props.aside}
        </div>
      ) : (
        heading
      )}
      {props.children}
    </section>
  );
}
