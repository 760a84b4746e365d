"""{% calibration_summary dataset as calibration %}: CALIBRATED's held-out row and coefficients for a dataset."""

from django import template

from metrics_bridge.services.agreement import calibration_summary as build_calibration_summary

register = template.Library()


@register.simple_tag
def calibration_summary(dataset):
    return build_calibration_summary(dataset=dataset)
